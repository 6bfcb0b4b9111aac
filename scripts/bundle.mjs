#!/usr/bin/env node
/**
 * Bundles the agent (entry src/cli.ts) into ONE CommonJS file for a Node
 * Single Executable Application (SEA). Used by scripts/build-binary.sh.
 *
 *   node scripts/bundle.mjs [--outfile dist/sea/wcf-agent.cjs] [--minify]
 *
 * Why CommonJS: a SEA main script is run as CommonJS, and its `require` can load
 * built-in modules only. So every dependency (most are ESM-only: undici,
 * pino, p-retry, commander, zod) is bundled in, and the build FAILS if
 * anything is left as an external import that is not a Node built-in.
 *
 * `import.meta.*` does not exist in CommonJS: it is defined to values computed
 * from `__filename` (in a SEA, `__filename` is the executable's path). No
 * bundled module reads it today (node-cron, whose ESM build does, is not
 * imported by src/); the shim keeps a future import from silently getting
 * `undefined`.
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
    minify: { type: 'boolean', default: false },
  },
});
const outfile = values.outfile;

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
  format: 'cjs',
  define: {
    'import.meta.url': '__wcf_import_meta_url',
    'import.meta.filename': '__filename',
    'import.meta.dirname': '__dirname',
  },
  banner: { js: `const __wcf_import_meta_url = require('node:url').pathToFileURL(__filename).href;` },
  plugins: [noWorkerThreads],
  // jsonc-parser's main file is a UMD wrapper whose require() calls esbuild cannot follow
  // (the bundle then fails at run time on './impl/format'); its ES module build bundles.
  alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
  // Whitespace and comments always go (names stay, see keepNames): V8 holds the bundle's
  // source for as long as the agent runs, and one non-Latin-1 character in a dependency's
  // comment made it store all of it as two-byte text, 2.6 MB instead of 0.9 MB (README,
  // Performance). --minify also shortens local names.
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: values.minify,
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
  console.error(`bundle: non-built-in external imports (a SEA cannot load them): ${[...new Set(bad)].join(', ')}`);
  process.exit(1);
}
if (result.warnings.length) {
  console.error(`bundle: ${result.warnings.length} warning(s); refusing to build a binary from it`);
  process.exit(1);
}
writeFileSync(outfile.replace(/\.c?js$/, '') + '.meta.json', JSON.stringify(result.metafile));
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.error(`bundle: ${relative(ROOT, outfile)} (${(bytes / 1024 / 1024).toFixed(1)} MB)`);
