import { execa, ExecaError } from 'execa';
import { DnsError } from '../errors.js';
import { formatCommand } from '../firewall/exec.js';
import type { DnsRunner } from './types.js';

const TIMEOUT_MS = 120_000;
const STDERR_IN_MESSAGE = 2000;

/** execa with argument arrays and stdin only; any failure is a DnsError naming the command with its stderr. */
export function createDnsRunner(prefix: readonly string[] = []): DnsRunner {
  return {
    async run(argv, input) {
      const full = [...prefix, ...argv];
      const command = formatCommand(full[0]!, full.slice(1));
      try {
        const r = await execa(full[0]!, full.slice(1), { input: input ?? '', timeout: TIMEOUT_MS, forceKillAfterDelay: 2000, env: { LC_ALL: 'C' }, maxBuffer: 512 * 1024 * 1024 });
        return r.stdout;
      } catch (err) {
        const e = err as ExecaError;
        const stderr = String(e.stderr ?? '').trim();
        const out = String(e.stdout ?? '').trim();
        // unbound-control reports bad input lines on stdout with a non-zero exit.
        const detail = (stderr || out || e.shortMessage || String(err)).slice(0, STDERR_IN_MESSAGE);
        throw new DnsError(`${command} failed: ${detail}`, { command, stderr: stderr || out, cause: err });
      }
    },
  };
}
