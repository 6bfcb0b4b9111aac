#!/usr/bin/env node
import { main } from './cli/main.js';

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
