// The program proper, loaded by src/cli.ts once the Node version is known to be recent enough.
import { main } from './main.js';

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
