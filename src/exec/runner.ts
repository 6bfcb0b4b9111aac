import { CommandFailure, runCommand } from './run.js';

/**
 * Runs one external tool with an argument array and optional stdin, never a shell. The
 * firewall backends and the resolver backends both take one; tests pass one that prefixes
 * `ip netns exec NS`.
 */
export interface CommandRunner {
  /** Where the commands run (the namespace prefix), when known: one kernel ruleset per scope. */
  readonly scope?: string;
  /**
   * `readOnly`: a listing, ended when the daemon stops (a write is let finish). `timeoutMs`: this
   * call's own limit instead of the runner's (a quick read a scrape waits for; a write sized for
   * a million elements): the child is killed when it passes, never left running.
   */
  run(file: string, args: readonly string[], options?: { input?: string | Buffer; readOnly?: boolean; timeoutMs?: number }): Promise<{ stdout: string; stderr: string }>;
}

/** Shell-like rendering of an argument array, for messages only (never executed). */
export function formatCommand(file: string, args: readonly string[]): string {
  return [file, ...args].map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** A failed run as the caller's error class sees it. */
export interface RunFailure {
  /** The command as formatCommand shows it. */
  readonly command: string;
  /** The whole argument array, prefix included. */
  readonly argv: readonly string[];
  readonly input: string | Buffer | undefined;
  /** The tool's failure (CommandFailure), or whatever else was thrown. */
  readonly cause: unknown;
}

export interface CommandRunnerOptions {
  /** Prepended to every command (`ip netns exec NS`). */
  readonly prefix?: readonly string[];
  /** Kill a command that runs longer than this (SIGTERM, then SIGKILL after killAfterMs). */
  readonly timeoutMs: number;
  readonly killAfterMs?: number;
  /** Most bytes kept of stdout and of stderr each. */
  readonly maxBuffer: number;
  /** Turns a failure into the backend's own error class (FirewallError, DnsError), naming the command. */
  readonly fail: (failure: RunFailure) => Error;
}

/** The one runner behind every backend: each backend supplies only its limits and its error class. */
export function createCommandRunner(o: CommandRunnerOptions): CommandRunner {
  const prefix = o.prefix ?? [];
  return {
    scope: prefix.join(' '),
    async run(file, args, runOptions) {
      const argv = [...prefix, file, ...args];
      try {
        return await runCommand(argv, {
          input: runOptions?.input,
          readOnly: runOptions?.readOnly,
          timeoutMs: runOptions?.timeoutMs ?? o.timeoutMs,
          killAfterMs: o.killAfterMs ?? 2000,
          maxBuffer: o.maxBuffer,
          // Tools' messages in English, so they are greppable and stable.
          env: { LC_ALL: 'C' },
        });
      } catch (err) {
        throw o.fail({ command: formatCommand(argv[0]!, argv.slice(1)), argv, input: runOptions?.input, cause: err });
      }
    },
  };
}

export { CommandFailure };
