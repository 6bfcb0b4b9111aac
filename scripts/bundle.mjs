#!/usr/bin/env node
/**
 * Bundles the agent (entry src/cli.ts) with esbuild, straight from the TypeScript sources.
 *
 *   node scripts/bundle.mjs --target dist     dist/cli.js + dist/chunks/ (what `npm run build` makes)
 *   node scripts/bundle.mjs [--target binary] [--outfile dist/sea/wcf-agent.cjs] [--minify]
 *
 * Why bundle at all: a daemon on every host of a fleet pays for each module it loads. As
 * ~250 separate files (92 of them zod's), `wcf-agent run` held 76-78 MB at 10k indicators;
 * bundled, 72-73 MB (docs/performance.md). V8 keeps less per script and compiles less.
 *
 * --target dist: ES modules, split at every dynamic import(), so each command, the metrics
 * endpoint and the URL feed stay separate chunks that load only when used (the daemon with
 * url_feed off never loads the resolver code or the public suffix list). dist/cli.js keeps
 * src/cli.ts's shebang, and with it the agent's Node flags. The source map beside each chunk
 * is read only under `node --enable-source-maps`, to map a stack trace back to src/.
 *
 * --target binary: ONE CommonJS file for a Node Single Executable Application (SEA), used
 * by scripts/build-binary.sh. A SEA main script is run as CommonJS, and its `require` can
 * load built-in modules only. So every dependency (most are ESM-only: undici, pino,
 * p-retry, commander, zod) is bundled in, and the build FAILS if anything is left as an
 * external import that is not a Node built-in (true of both targets: dist/ must run without
 * node_modules too). `import.meta.*` does not exist in CommonJS: it is defined to values
 * computed from `__filename` (in a SEA, the executable's path). No bundled module reads it
 * today; the shim keeps a future import from silently getting `undefined`.
 *
 * pino transports run in worker threads (thread-stream) and load files from disk, which a
 * SEA cannot do. The agent never uses them (src/log.ts writes with
 * pino.destination({ sync: true }) or a plain stream), so thread-stream is replaced by a
 * stub that throws if anything ever tries: loud, not a hang.
 */
import { execFileSync } from 'node:child_process';
import { builtinModules } from 'node:module';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'binary' },
    outfile: { type: 'string', default: join(ROOT, 'dist/sea/wcf-agent.cjs') },
    minify: { type: 'boolean', default: false },
  },
});
if (values.target !== 'binary' && values.target !== 'dist') {
  console.error(`bundle: --target must be binary or dist, not ${values.target}`);
  process.exit(2);
}

const THREAD_STREAM_STUB = `
'use strict';
module.exports = class ThreadStream {
  constructor() {
    throw new Error('wcf-agent: pino transports (worker threads) are not available in the bundled agent');
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

/**
 * The commit the build is made from, for `wcf-agent version` and `--version`: WCF_BUILD_COMMIT
 * when set (a build from a source archive), else the checkout's HEAD, else `unknown`.
 */
function buildCommit() {
  if (process.env.WCF_BUILD_COMMIT) return process.env.WCF_BUILD_COMMIT;
  try {
    return execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}
const BUILD_DEFINE = { __WCF_BUILD_COMMIT__: JSON.stringify(buildCommit()) };
/**
 * --target binary: the SHA-256 of the binary's SBOM is not known yet (the SBOM lists what this
 * bundle holds, read from its metafile), so the bundle holds this 64-character placeholder
 * (where esbuild copied it, more than once), and scripts/build-binary.sh replaces it with the
 * hash once the SBOM is written. Unreplaced, it is not a hash, and the agent reports no SBOM.
 */
const SBOM_PLACEHOLDER = 'wcf-agent:sbom-sha256-placeholder:'.padEnd(64, '-');

/** What both targets share. */
const common = {
  absWorkingDir: ROOT,
  entryPoints: ['src/cli.ts'],
  bundle: true,
  platform: 'node',
  target: 'node24',
  plugins: [noWorkerThreads],
  // jsonc-parser's main file is a UMD wrapper whose require() calls esbuild cannot follow
  // (the bundle then fails at run time on './impl/format'); its ES module build bundles.
  alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
  // Whitespace and comments always go (names stay, see keepNames): V8 holds the bundle's
  // source for as long as the agent runs, and one non-Latin-1 character in a dependency's
  // comment made it store all of it as two-byte text, 2.6 MB instead of 0.9 MB
  // (docs/performance.md). --minify also shortens local names.
  minifyWhitespace: true,
  minifySyntax: true,
  minifyIdentifiers: values.minify,
  // Class and function names stay readable in stack traces and error labels.
  keepNames: true,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
};

const DIST = join(ROOT, 'dist');
const outfile = values.target === 'dist' ? join(DIST, 'cli.js') : values.outfile;
let result;
if (values.target === 'dist') {
  // A previous build's chunks have other hashes: remove them, so dist/ holds one build.
  rmSync(join(DIST, 'chunks'), { recursive: true, force: true });
  result = await esbuild.build({
    ...common,
    outdir: DIST,
    entryNames: '[name]',
    chunkNames: 'chunks/[name]-[hash]',
    format: 'esm',
    define: BUILD_DEFINE,
    splitting: true,
    sourcemap: 'linked',
    // Bundled CommonJS libraries (pino, commander) call require() for Node's built-ins; an
    // ES module has no require of its own, so each chunk gets one.
    banner: { js: `import { createRequire as __wcfCreateRequire } from 'node:module'; const require = __wcfCreateRequire(import.meta.url);` },
  });
  chmodSync(outfile, 0o755);
} else {
  mkdirSync(dirname(outfile), { recursive: true });
  result = await esbuild.build({
    ...common,
    outfile,
    format: 'cjs',
    define: {
      ...BUILD_DEFINE,
      __WCF_SBOM_SHA256__: JSON.stringify(SBOM_PLACEHOLDER),
      'import.meta.url': '__wcf_import_meta_url',
      'import.meta.filename': '__filename',
      'import.meta.dirname': '__dirname',
    },
    banner: { js: `const __wcf_import_meta_url = require('node:url').pathToFileURL(__filename).href;` },
  });
}

// A SEA's require() loads built-ins only, and dist/ must run without node_modules: any other
// external import would fail at run time.
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
const bad = [];
for (const out of Object.values(result.metafile.outputs)) {
  for (const imp of out.imports) {
    if (imp.external && !builtins.has(imp.path) && !imp.path.startsWith('node:')) bad.push(imp.path);
  }
}
if (bad.length) {
  console.error(`bundle: non-built-in external imports (the agent could not load them): ${[...new Set(bad)].join(', ')}`);
  process.exit(1);
}
if (result.warnings.length) {
  console.error(`bundle: ${result.warnings.length} warning(s); refusing to ship it`);
  process.exit(1);
}
// Which source went into which chunk: the footprint test reads it to name what `run` loads.
writeFileSync(outfile.replace(/\.c?js$/, '') + '.meta.json', JSON.stringify(result.metafile));
const bytes = Object.entries(result.metafile.outputs).reduce((n, [file, o]) => (file.endsWith('.map') ? n : n + o.bytes), 0);
console.error(`bundle: ${relative(ROOT, outfile)} (${(bytes / 1024 / 1024).toFixed(1)} MB)`);
