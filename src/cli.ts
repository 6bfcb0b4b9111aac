#!/usr/bin/env -S node --max-semi-space-size=2
// The flags on the line above are the agent's Node flags, here and in the single binary
// (scripts/build-binary.sh copies them into the blob's execArgv). --max-semi-space-size=2:
// V8 otherwise lets the young generation grow to 64 MB per semi-space (134 MB committed and
// touched), the largest single item of the agent's memory at a million indicators. 16 MB took
// ~70 MB off the peak there and 4 MB another ~20-30 MB off the daemon at 10k and 100k; 2 MB,
// with the daemon's other savings in place, takes 6 MB off the 10k peak and 8 MB off the 100k
// peak again, the million-entry cycle as fast (docs/performance.md: npm run bench -- --only
// daemon). 1 MB was measured before those savings and made the 1M cycle ~10% slower.
//
// This entry imports nothing but the version check: on a Node too old for the agent's
// libraries, loading them fails with a stack trace from deep inside one of them. The rest is
// loaded only once the version is known to be good.
import { nodeVersionProblem } from './node-version.js';

const problem = nodeVersionProblem(process.versions.node, process.execPath);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 2; // as for a bad configuration: a restart will not fix it
} else {
  // Not awaited (no top-level await), so the single-binary bundle (CJS) can run it too.
  import('./cli/entry.js').catch((err: unknown) => {
    process.stderr.write(`wcf-agent: internal error: cannot load the program: ${String(err)}\n`);
    process.exitCode = 1;
  });
}
