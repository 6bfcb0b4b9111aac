import { DnsError } from '../errors.js';
import { CommandFailure, runCommand } from '../exec/run.js';
import { formatCommand } from '../firewall/exec.js';
import type { DnsRunner } from './types.js';

const TIMEOUT_MS = 120_000;
const STDERR_IN_MESSAGE = 2000;

/** Argument arrays and stdin only (src/exec/run.ts); any failure is a DnsError naming the command with its stderr. */
export function createDnsRunner(prefix: readonly string[] = []): DnsRunner {
  return {
    async run(argv, input) {
      const full = [...prefix, ...argv];
      const command = formatCommand(full[0]!, full.slice(1));
      try {
        const r = await runCommand(full, { input, timeoutMs: TIMEOUT_MS, killAfterMs: 2000, env: { LC_ALL: 'C' }, maxBuffer: 512 * 1024 * 1024 });
        return r.stdout;
      } catch (err) {
        const stderr = err instanceof CommandFailure ? err.stderr.trim() : '';
        const out = err instanceof CommandFailure ? err.stdout.trim() : '';
        // unbound-control reports bad input lines on stdout with a non-zero exit.
        const detail = (stderr || out || (err instanceof Error ? err.message : String(err))).slice(0, STDERR_IN_MESSAGE);
        throw new DnsError(`${command} failed: ${detail}`, { command, stderr: stderr || out, cause: err });
      }
    },
  };
}
