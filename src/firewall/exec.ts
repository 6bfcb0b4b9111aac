import { CommandFailure, createCommandRunner, type CommandRunner } from '../exec/runner.js';
import { FirewallError } from '../errors.js';

/** Default per-command limit. A 1,000,000-entry `nft -f` takes tens of seconds; nothing legitimate takes minutes. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 180_000;
/** `ipset save` / `nft -j list set` of a million entries is ~100 MB of text. */
const MAX_BUFFER = 1024 * 1024 * 1024;
/** How much of a failing command's stderr goes into the error message (the full text stays in `.stderr`). */
const STDERR_IN_MESSAGE = 2000;
const STDERR_KEPT = 64 * 1024;

export interface RunnerOptions {
  /** Kill a command that runs longer than this (SIGTERM, then SIGKILL 2 s later). */
  timeoutMs?: number;
}

function countLines(text: string | Buffer): number {
  let n = 0;
  let i = -1;
  while ((i = text.indexOf('\n', i + 1)) !== -1) n++;
  return text.length > 0 && text.lastIndexOf('\n') !== text.length - 1 ? n + 1 : n;
}

/** The command prefix that runs a firewall command inside network namespace `netns` (none: the host's own). */
export function netnsPrefix(netns: string | undefined): string[] {
  return netns ? ['ip', 'netns', 'exec', netns] : [];
}

/**
 * Runs firewall tools (src/exec/run.ts): argument arrays and stdin only, never a
 * shell. `prefix` is prepended to every command (tests pass
 * `['ip', 'netns', 'exec', NS]`). Every failure (non-zero exit, missing
 * binary, timeout) becomes a FirewallError naming the command and carrying its
 * stderr.
 */
export function createRunner(prefix: readonly string[] = [], options: RunnerOptions = {}): CommandRunner {
  return createCommandRunner({
    prefix,
    timeoutMs: options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    maxBuffer: MAX_BUFFER,
    fail: ({ command, argv, input, cause }) => {
      const stdinNote = input ? ` (stdin: ${countLines(input)} lines)` : '';
      if (cause instanceof CommandFailure) {
        const stderr = cause.stderr.trim().slice(0, STDERR_KEPT);
        const reason = cause.reason === 'not-found' ? `${argv[0]} not found (is it installed and in PATH?)` : cause.message;
        const shown = stderr.length > STDERR_IN_MESSAGE ? `${stderr.slice(0, STDERR_IN_MESSAGE)}…` : stderr;
        return new FirewallError(`command failed: ${command}${stdinNote}: ${reason}${shown ? `: ${shown}` : ''}`, { command, stderr, cause });
      }
      return new FirewallError(`command failed: ${command}${stdinNote}: ${String(cause)}`, { command, cause });
    },
  });
}

/** True when a FirewallError's stderr matches (for "does not exist" style tolerances). */
export function stderrMatches(err: unknown, pattern: RegExp): boolean {
  return err instanceof FirewallError && pattern.test(err.stderr ?? '');
}

/**
 * Add the input line a restore tool complained about ("Error in line 3",
 * "Error occurred at line: 3") to a FirewallError, so the message names the
 * entry, not just a line number in a million-line script.
 */
export function withFailingLine(err: unknown, input: string | Buffer, pattern: RegExp): unknown {
  if (!(err instanceof FirewallError)) return err;
  const m = pattern.exec(err.stderr ?? '');
  const n = m ? Number(m[1]) : NaN;
  if (!Number.isInteger(n) || n < 1) return err;
  let start = 0;
  for (let i = 1; i < n && start !== -1; i++) {
    const nl = input.indexOf('\n', start);
    start = nl === -1 ? -1 : nl + 1;
  }
  if (start === -1) return err;
  const end = input.indexOf('\n', start);
  const stop = end === -1 ? input.length : end;
  const line = (typeof input === 'string' ? input.slice(start, stop) : input.toString('utf8', start, stop)).slice(0, 200);
  return new FirewallError(`${err.message} (input line ${n}: ${JSON.stringify(line)})`, {
    command: err.command,
    stderr: err.stderr,
    cause: err.cause ?? err,
  });
}

/** Runs async operations one at a time (apply and flush of one plugin must not interleave). */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
