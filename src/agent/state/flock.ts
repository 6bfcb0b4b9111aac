import { closeSync, constants, fstatSync, ftruncateSync, openSync, readFileSync, readlinkSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { errorMessage, LockHeldError, StateError } from '../../errors.js';
import { CommandFailure, runCommand } from '../../exec/run.js';
import { readStateFile, UnsafeStateFile } from '../../util/untrusted-file.js';

/**
 * Locks the kernel holds: flock(2) on a file in the state dir. The kernel keeps such a
 * lock on the open file, not on a process id, so it holds across PID namespaces (a
 * container on the host's state path sees neither the host's PIDs nor its /proc), and
 * it goes when the holder's descriptor closes, which the kernel does for a process that
 * dies in any way, kill -9 included. Nobody has to judge whether a recorded holder
 * still lives, and nobody removes a lock file: a lock dies with its holder, never by
 * another process's hand.
 *
 * Node has no flock(2), and a native addon does not fit the single binary. So the agent
 * opens the file itself and hands that open file to util-linux's `flock` as its file
 * descriptor 3; `flock` locks it and exits at once. The lock then belongs to the open
 * file, which the agent keeps open (opened close-on-exec, no other child inherits it):
 * it is held exactly as long as the agent keeps the descriptor, and released by the
 * kernel when the agent exits or is killed. No helper process stays behind to be
 * watched or killed (a long-lived `flock` child holding the lock would need its own
 * death signal and would outlive a SIGKILLed agent by a moment). The short-lived
 * `flock` runs through the agent's exec layer like every other tool.
 *
 * The holder writes its identity (PID, PID namespace, start time) into the file once it
 * holds the lock and clears it before letting go, so a refused process can name it.
 */

/** Who holds a lock, as the holder wrote it. */
export interface LockHolder {
  pid: number;
  /** The holder's PID namespace (`pid:[4026531836]`); its PID means something only there. */
  pidns?: string;
  /** Epoch seconds the holder process started, when /proc told it. */
  startedAt?: number;
}

/** `flock`'s exit code when the lock is held by someone else (its own default, 1, is also its error code). */
const CONFLICT_EXIT = 75;
/**
 * How long an exclusive take waits at least. A read-only look (`status`, `flush` asking
 * whether a daemon runs) takes the lock shared for the moment `flock` runs; a cycle or a
 * second `run` starting in that moment must not take the look for a holder.
 */
export const LOOK_GRACE_MS = 500;

const OPEN_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const LOOK_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** This process's PID namespace as /proc names it, or undefined without /proc. */
export function pidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

/** Epoch seconds this process started: its start time (field 22 of /proc/self/stat, in clock ticks) after the boot time. */
function startedAt(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'latin1');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3]);
    const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'))?.[1];
    // USER_HZ is 100 on every Linux architecture the agent ships for (the kernel fixes it for /proc).
    return btime === undefined || !Number.isFinite(ticks) ? undefined : Number(btime) + Math.floor(ticks / 100);
  } catch {
    return undefined;
  }
}

export function currentHolder(): LockHolder {
  const ns = pidNamespace();
  const at = startedAt();
  return { pid: process.pid, ...(ns !== undefined ? { pidns: ns } : {}), ...(at !== undefined ? { startedAt: at } : {}) };
}

/** The identity in a lock file's text, or undefined (empty: the holder has not written it yet, or let go). */
export function parseHolder(text: string): LockHolder | undefined {
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    if (!Number.isInteger(j.pid) || (j.pid as number) <= 0) return undefined;
    return {
      pid: j.pid as number,
      ...(typeof j.pidns === 'string' ? { pidns: j.pidns } : {}),
      ...(typeof j.startedAt === 'number' ? { startedAt: j.startedAt } : {}),
    };
  } catch {
    return undefined;
  }
}

/** Whether `holder` runs in a PID namespace other than this process's (its PID is not ours to look up). */
export function inOtherPidNamespace(holder: LockHolder): boolean {
  const mine = pidNamespace();
  return holder.pidns !== undefined && mine !== undefined && holder.pidns !== mine;
}

/** "pid 123", "pid 1 in another PID namespace: pid:[…]", or "a process that did not record its PID". */
export function describeHolder(holder: LockHolder | undefined): string {
  if (!holder) return 'a process that did not record its PID';
  return `pid ${holder.pid}${inOtherPidNamespace(holder) ? ` in another PID namespace: ${holder.pidns}` : ''}`;
}

/** The identity written in the lock file at `path`; undefined when it holds none or is not a file the agent wrote. */
export function readHolder(path: string): LockHolder | undefined {
  try {
    const buf = readStateFile(path, 4096);
    return buf === undefined ? undefined : parseHolder(buf.toString('latin1'));
  } catch (err) {
    if (err instanceof UnsafeStateFile) return undefined;
    throw err;
  }
}

/**
 * Open (creating) the lock file. Anything at that name that is not a regular file (a
 * symlink, a FIFO) is not a lock: it is moved aside and removed itself, never followed.
 */
function openLockFile(path: string): number {
  for (let attempt = 0; ; attempt++) {
    let fd: number | undefined;
    try {
      fd = openSync(path, OPEN_FLAGS, 0o600);
      if (fstatSync(fd).isFile()) return fd;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOOP') throw new StateError(`cannot open the lock ${path}: ${errorMessage(err)}`, { cause: err });
    }
    if (fd !== undefined) closeSync(fd);
    if (attempt > 0) throw new StateError(`cannot open the lock ${path}: it is not a regular file`);
    const aside = `${path}.not-a-lock-${process.pid}`;
    try {
      renameSync(path, aside);
      unlinkSync(aside);
    } catch (err) {
      throw new StateError(`cannot remove ${path}, which is not a lock file: ${errorMessage(err)}`, { cause: err });
    }
  }
}

/** Have `flock` lock the open file `fd`; false when another holds it past `waitMs`. */
async function flockFd(fd: number, path: string, mode: 'exclusive' | 'shared', waitMs: number): Promise<boolean> {
  const wait = waitMs > 0 ? ['--timeout', (waitMs / 1000).toFixed(3)] : ['--nonblock'];
  try {
    await runCommand(['flock', `--${mode}`, ...wait, '--conflict-exit-code', String(CONFLICT_EXIT), '3'], {
      passFd: fd,
      timeoutMs: waitMs + 30_000,
      maxBuffer: 4096,
      env: { LC_ALL: 'C' },
    });
    return true;
  } catch (err) {
    if (err instanceof CommandFailure && err.reason === 'exit' && err.exitCode === CONFLICT_EXIT) return false;
    if (err instanceof CommandFailure && err.reason === 'not-found') {
      throw new StateError(`cannot lock ${path}: flock (util-linux) is not installed`, { cause: err });
    }
    const stderr = err instanceof CommandFailure && err.stderr.trim() ? `: ${err.stderr.trim()}` : '';
    throw new StateError(`cannot lock ${path}: flock ${errorMessage(err)}${stderr}`, { cause: err });
  }
}

/** A lock this process holds. */
export interface HeldLock {
  readonly path: string;
  /** Clear the identity and let go (the kernel would on exit anyway). */
  release(): void;
}

/**
 * Take the lock on `path` exclusively, waiting up to `waitMs` (at least LOOK_GRACE_MS) for
 * another holder to let go, and write this process's identity in it. Rejects with
 * LockHeldError naming the holder when it is still held.
 */
export async function takeLock(path: string, waitMs: number): Promise<HeldLock> {
  const fd = openLockFile(path);
  try {
    if (!(await flockFd(fd, path, 'exclusive', Math.max(waitMs, LOOK_GRACE_MS)))) {
      const holder = readHolder(path);
      throw new LockHeldError(holder?.pid, describeHolder(holder), path);
    }
    ftruncateSync(fd, 0);
    writeSync(fd, JSON.stringify(currentHolder()), 0);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      try {
        ftruncateSync(fd, 0); // still held: nobody reads a holder that is going
      } finally {
        closeSync(fd);
      }
    },
  };
}

/**
 * Whether someone holds the lock on `path` now, and who (as the holder wrote it; undefined
 * when it wrote nothing yet). Read-only: it takes the lock shared for the moment `flock`
 * runs, which no other look conflicts with, and writes nothing.
 */
export async function lookAtLock(path: string): Promise<{ holder: LockHolder | undefined } | undefined> {
  let fd: number;
  try {
    fd = openSync(path, LOOK_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP') return undefined; // no lock file (a symlink is none either)
    throw new StateError(`cannot open the lock ${path}: ${errorMessage(err)}`, { cause: err });
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    if (await flockFd(fd, path, 'shared', 0)) return undefined;
  } finally {
    closeSync(fd);
  }
  return { holder: readHolder(path) };
}
