#!/usr/bin/env -S node --max-semi-space-size=16
// The flags on the line above are the agent's Node flags, here and in the single binary
// (scripts/build-binary.sh copies them into the blob's execArgv). --max-semi-space-size=16:
// V8 otherwise lets the young generation grow to 64 MB per semi-space (134 MB committed and
// touched), the largest single item of the agent's memory at a million indicators; capped at
// 16 MB, peak RSS there drops by ~70 MB at no measurable cost in time (npm run bench).
import { main } from './cli/main.js';

// `wcf-agent plan | head`: a closed pipe is the reader's choice, not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

// Wrapped in main() with no top-level await, so the single-binary bundle (CJS) can run it too.
main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`wcf-agent: internal error: ${String(err)}\n`);
    process.exitCode = 1;
  },
);
