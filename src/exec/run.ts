import { spawn, type ChildProcess } from 'node:child_process';
import { childExited, deathSignalWrapper, rememberChild, trackRead } from './children.js';

/**
 * The agent's one way to run an external tool (nft, ipset, iptables-restore,
 * unbound-control, ip): an argument array and stdin, never a shell, so
 * server-supplied text can never become a command. Written over
 * node:child_process instead of a library because the library we used hooked
 * the process's own SIGTERM/SIGINT (to clean up children) and re-raised them,
 * which killed the daemon mid-apply; it also cost ~10 MB resident.
 *
 * The child stays in the agent's process group on purpose: the tools are single
 * processes (`ip netns exec` execs the tool in place), and systemd stops the
 * whole unit's cgroup anyway, so a timeout kills the one child it started. It
 * is started through `setpriv --pdeathsig KILL` where installed, so it dies
 * with the agent even when the agent is SIGKILLed (see children.ts).
 */

export interface RunCommandOptions {
  /** Written to the child's stdin in chunks (no copy of the whole text); stdin is closed after it. */
  input?: string | Buffer;
  /** Kill the child (SIGTERM, then SIGKILL after `killAfterMs`) when it runs longer than this. */
  timeoutMs: number;
  /** Grace between SIGTERM and SIGKILL on a timeout. */
  killAfterMs?: number;
  /** Most bytes kept from stdout and from stderr each; more kills the child and fails the run. */
  maxBuffer: number;
  /** Added to the agent's own environment. */
  env?: Record<string, string>;
  /** Only reads (a listing): killed when the daemon stops (see stopReads). */
  readOnly?: boolean;
  /**
   * An open file of the agent's, given to the child as its file descriptor 3 (the same open
   * file, not a copy): `flock 3` then locks the agent's own open file (see state/flock.ts).
   */
  passFd?: number;
}

export interface CommandOutput {
  stdout: string;
  stderr: string;
}

export type FailureReason = 'exit' | 'signal' | 'timeout' | 'not-found' | 'spawn' | 'output-limit';

/** Why a command failed, with what it printed. Always wrapped by the caller's own error class. */
export class CommandFailure extends Error {
  readonly reason: FailureReason;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  constructor(
    message: string,
    details: { reason: FailureReason; exitCode?: number | null; signal?: NodeJS.Signals | null; stdout?: string; stderr?: string; cause?: unknown },
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'CommandFailure';
    this.reason = details.reason;
    this.exitCode = details.exitCode ?? null;
    this.signal = details.signal ?? null;
    this.stdout = details.stdout ?? '';
    this.stderr = details.stderr ?? '';
  }
}

/** Characters per stdin write: small enough that no large Buffer copy of the input is made at once. */
const STDIN_CHUNK = 256 * 1024;

/** Collects one output stream as decoded text pieces, refusing more than `max` bytes. */
function collect(stream: NodeJS.ReadableStream, max: number, onOverflow: () => void): () => string {
  const parts: string[] = [];
  let bytes = 0;
  let over = false;
  stream.setEncoding('utf8');
  stream.on('data', (piece: string) => {
    if (over) return;
    bytes += Buffer.byteLength(piece);
    if (bytes > max) {
      over = true;
      onOverflow();
      return;
    }
    parts.push(piece);
  });
  return () => parts.join('');
}

/** Writes `input` to `stdin` piece by piece, waiting for the pipe to drain, then closes it. */
function feed(stdin: NodeJS.WritableStream, input: string | Buffer | undefined): void {
  // A child that exits without reading its stdin (an early error) makes the pipe fail with EPIPE;
  // its exit code and stderr say what went wrong, so the write error itself is not the story.
  stdin.on('error', () => undefined);
  if (input === undefined || input.length === 0) {
    stdin.end();
    return;
  }
  let offset = 0;
  const writeMore = (): void => {
    while (offset < input.length) {
      // Slices of a string or Buffer are views, not copies; only each small piece is encoded.
      const piece = typeof input === 'string' ? input.slice(offset, offset + STDIN_CHUNK) : input.subarray(offset, offset + STDIN_CHUNK);
      offset += STDIN_CHUNK;
      if (!stdin.write(piece)) {
        stdin.once('drain', writeMore);
        return;
      }
    }
    stdin.end();
  };
  writeMore();
}

/** What a failed start means, for the errors a host under pressure gives (the code stays in the message). */
const START_ERRORS: Readonly<Record<string, string>> = {
  EMFILE: 'the agent has too many open files',
  ENFILE: 'the host has too many open files',
  EAGAIN: 'no process can be created now (process or memory limit)',
  ENOMEM: 'out of memory',
  E2BIG: 'its arguments are too long',
};

/** A child that could not be started, as a failed command: ENOENT is a missing tool, anything else a failed start. */
function startFailure(name: string, err: unknown): CommandFailure {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new CommandFailure(`${name}: ${(err as Error).message}`, { reason: 'not-found', cause: err });
  const why = code && START_ERRORS[code] ? `${START_ERRORS[code]} (${code})` : (err as Error).message;
  return new CommandFailure(`${name}: could not be started: ${why}`, { reason: 'spawn', cause: err });
}

/** setpriv's exit code and message when the tool it was to run cannot be executed. */
const WRAPPED_NOT_FOUND = /^setpriv: failed to execute/m;

/** `argv` behind the wrapper that makes it die with the agent (see children.ts). */
export function wrapForDeath(argv: readonly string[]): string[] {
  return [...deathSignalWrapper(), ...argv];
}

/** True when a wrapped tool's exit says the tool itself is missing (setpriv exits 127). */
export function wrappedNotFound(exitCode: number | null, stderr: string): boolean {
  return exitCode === 127 && WRAPPED_NOT_FOUND.test(stderr);
}

/** Runs `argv[0]` with the rest as its arguments; resolves with its output on exit code 0, else rejects with a CommandFailure. */
export function runCommand(argv: readonly string[], options: RunCommandOptions): Promise<CommandOutput> {
  if (!argv[0]) return Promise.reject(new CommandFailure('empty command', { reason: 'spawn' }));
  const [file, ...args] = wrapForDeath(argv) as [string, ...string[]];
  return new Promise((resolve, reject) => {
    let timedOut = false;
    let overflowed = false;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    let child: ChildProcess;
    try {
      child = spawn(file, args, {
        shell: false,
        // Three pipes always; fd 3 only when asked for.
        stdio: options.passFd === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', options.passFd],
        env: { ...process.env, ...options.env },
      });
    } catch (err) {
      // Node throws for some failures (ENOMEM, E2BIG) instead of emitting 'error'.
      reject(startFailure(argv[0]!, err));
      return;
    }
    // First of all: a failed start (EMFILE, EAGAIN, ENOENT) is emitted as 'error' on the next
    // tick, and an 'error' nobody listens to is an uncaught exception that ends the daemon. Once
    // the child runs, an 'error' is only a failed kill of an exited child: 'close' tells the outcome.
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (child.pid === undefined) reject(startFailure(argv[0]!, err));
    });
    const { stdin, stdout: outStream, stderr: errStream } = child;
    // Out of descriptors Node gives up before it creates the pipes: no process and no streams;
    // the 'error' above settles the run.
    if (child.pid === undefined) return;
    if (!stdin || !outStream || !errStream) {
      child.kill('SIGKILL');
      reject(new CommandFailure(`${argv[0]}: started without its pipes`, { reason: 'spawn' }));
      return;
    }
    rememberChild(child.pid);
    const kill = (): void => {
      child.kill('SIGTERM');
      killTimer ??= setTimeout(() => child.kill('SIGKILL'), options.killAfterMs ?? 2000);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, options.timeoutMs);
    let stopped = false;
    const untrack = options.readOnly
      ? trackRead(() => {
          stopped = true;
          child.kill('SIGKILL');
        })
      : undefined;
    const onOverflow = (): void => {
      overflowed = true;
      kill();
    };
    const stdout = collect(outStream, options.maxBuffer, onOverflow);
    const stderr = collect(errStream, options.maxBuffer, onOverflow);
    const finish = (outcome: CommandOutput | CommandFailure): void => {
      if (settled) return;
      settled = true;
      untrack?.();
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      if (outcome instanceof CommandFailure) reject(outcome);
      else resolve(outcome);
    };
    child.on('close', (exitCode, signal) => {
      childExited(child.pid);
      const out = { stdout: stdout(), stderr: stderr() };
      if (stopped) finish(new CommandFailure('stopped: the agent is stopping', { reason: 'signal', exitCode, signal, ...out }));
      else if (timedOut) finish(new CommandFailure(`timed out after ${options.timeoutMs} ms`, { reason: 'timeout', exitCode, signal, ...out }));
      else if (overflowed) finish(new CommandFailure(`output exceeded ${options.maxBuffer} bytes`, { reason: 'output-limit', exitCode, signal, ...out }));
      else if (exitCode === 0) finish(out);
      else if (wrappedNotFound(exitCode, out.stderr)) finish(new CommandFailure(`${argv[0]}: not found`, { reason: 'not-found', exitCode, ...out }));
      else if (exitCode !== null) finish(new CommandFailure(`exit code ${exitCode}`, { reason: 'exit', exitCode, ...out }));
      else finish(new CommandFailure(`killed by ${signal ?? 'a signal'}`, { reason: 'signal', signal, ...out }));
    });
    feed(stdin, options.input);
  });
}
