#!/usr/bin/env node
/**
 * Bundles the agent (entry src/cli.ts) into ONE file, every dependency included.
 *
 *   node scripts/bundle.mjs [--outfile dist/sea/wcf-agent.cjs] [--format cjs|esm] [--minify]
 *
 * Two uses:
 * - `--format cjs` (the default), for a Node Single Executable Application (SEA),
 *   scripts/build-binary.sh. A SEA main script is run as CommonJS, and its `require`
 *   can load built-in modules only.
 * - `--format esm --minify --outfile dist/cli.js`, `npm run build`: the file `wcf-agent`
 *   runs from a checkout or npm. One minified file instead of ~150 modules plus every
 *   dependency's files: V8 parses and keeps less code (about 6 MB less resident). It
 *   keeps src/cli.ts's shebang, so the agent's Node flags stay on its first line.
 *
 * In both, the build FAILS if anything is left as an external import that is not a
 * Node built-in: the result must run with no node_modules beside it.
 *
 * CommonJS: `import.meta.*` does not exist there, so it is defined to values computed
 * from `__filename` (in a SEA, `__filename` is the executable's path). No
 * bundled module reads it today (node-cron, whose ESM build does, is not
 * imported by src/); the shim keeps a future import from silently getting
 * `undefined`. ES module: the bundled CommonJS dependencies (pino, prom-client)
 * call `require` for Node built-ins, which an ES module does not have, so a
 * `require` made with `createRequire` is put at the top.
 *
 * pino transports run in worker threads (thread-stream) and load files from
 * disk, which a SEA cannot do. The agent never uses them (src/log.ts writes
 * with pino.destination({ sync: true }) or a plain stream), so thread-stream is
 * replaced by a stub that throws if anything ever tries: loud, not a hang.
 */
import { builtinModules } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    outfile: { type: 'string', default: join(ROOT, 'dist/sea/wcf-agent.cjs') },
    format: { type: 'string', default: 'cjs' },
    minify: { type: 'boolean', default: false },
  },
});
const outfile = values.outfile;
const format = values.format;
if (format !== 'cjs' && format !== 'esm') {
  console.error(`bundle: --format must be cjs or esm, not ${format}`);
  process.exit(2);
}
const FORMAT_OPTIONS = {
  cjs: {
    define: {
      'import.meta.url': '__wcf_import_meta_url',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
    },
    banner: { js: `const __wcf_import_meta_url = require('node:url').pathToFileURL(__filename).href;` },
  },
  esm: {
    banner: { js: `import { createRequire as __wcf_createRequire } from 'node:module'; const require = __wcf_createRequire(import.meta.url);` },
  },
}[format];

const THREAD_STREAM_STUB = `
'use strict';
module.exports = class ThreadStream {
  constructor() {
    throw new Error('wcf-agent: pino transports (worker threads) are not available in the single binary');
  }
};
`;

/** @type {esbuild.Plugin} */
const noWorkerThreads = {
  name: 'no-worker-threads',
  setup(build) {
    build.onResolve({ filter: /^thread-stream$/ }, () => ({ path: 'thread-stream', namespace: 'wcf-stub' }));
    build.onLoad({ filter: /.*/, namespace: 'wcf-stub' }, () => ({ contents: THREAD_STREAM_STUB, loader: 'js' }));
  },
};

mkdirSync(dirname(outfile), { recursive: true });
const result = await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints: ['src/cli.ts'],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node24',
  format,
  ...FORMAT_OPTIONS,
  plugins: [noWorkerThreads],
  // jsonc-parser's main file is a UMD wrapper whose require() calls esbuild cannot follow
  // (the bundle then fails at run time on './impl/format'); its ES module build bundles.
  alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
  minify: values.minify,
  // Class and function names stay readable in stack traces and error labels.
  keepNames: true,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

// A SEA's require() loads built-ins only: any other external import would fail at run time.
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
const bad = [];
for (const out of Object.values(result.metafile.outputs)) {
  for (const imp of out.imports) {
    if (imp.external && !builtins.has(imp.path) && !imp.path.startsWith('node:')) bad.push(imp.path);
  }
}
if (bad.length) {
  console.error(`bundle: non-built-in external imports (the bundle must run alone): ${[...new Set(bad)].join(', ')}`);
  process.exit(1);
}
if (result.warnings.length) {
  console.error(`bundle: ${result.warnings.length} warning(s); refusing to build a binary from it`);
  process.exit(1);
}
writeFileSync(outfile.replace(/\.c?js$/, '') + '.meta.json', JSON.stringify(result.metafile));
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.error(`bundle: ${relative(ROOT, outfile)} (${(bytes / 1024 / 1024).toFixed(1)} MB)`);
