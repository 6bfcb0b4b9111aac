import { DnsError } from '../errors.js';
import { CommandFailure, createCommandRunner, type CommandRunner } from '../exec/runner.js';

const TIMEOUT_MS = 120_000;
const STDERR_IN_MESSAGE = 2000;

/** The resolver tools' runner (the one in src/exec); any failure is a DnsError naming the command with its stderr. */
export function createDnsRunner(prefix: readonly string[] = []): CommandRunner {
  return createCommandRunner({
    prefix,
    timeoutMs: TIMEOUT_MS,
    maxBuffer: 512 * 1024 * 1024,
    fail: ({ command, cause }) => {
      const stderr = cause instanceof CommandFailure ? cause.stderr.trim() : '';
      const out = cause instanceof CommandFailure ? cause.stdout.trim() : '';
      // unbound-control reports bad input lines on stdout with a non-zero exit.
      const detail = (stderr || out || (cause instanceof Error ? cause.message : String(cause))).slice(0, STDERR_IN_MESSAGE);
      return new DnsError(`${command} failed: ${detail}`, { command, stderr: stderr || out, cause });
    },
  });
}

/** Runs `argv` (tool first) and answers its stdout: the resolver backends read only what a tool printed. */
export async function runTool(runner: CommandRunner, argv: readonly string[], input?: string): Promise<string> {
  return (await runner.run(argv[0]!, argv.slice(1), input === undefined ? undefined : { input })).stdout;
}
