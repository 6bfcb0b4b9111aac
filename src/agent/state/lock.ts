import { closeSync, constants, linkSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { LockHeldError, StateError } from '../../errors.js';
import { readStateFile, UnsafeStateFile } from '../../util/untrusted-file.js';

/**
 * The lock records who holds it: PID, the process's start time (field 22 of
 * /proc/PID/stat, clock ticks since boot) and the boot id. A PID alone is not an
 * identity: after a reboot or a crash the PID is reused by an unrelated process and
 * a PID-only lock would stop all syncing. The holder counts as alive only if the
 * boot is the same and that PID still has the same start time, so a lock dies with
 * its holder even though the file stays (it lives in the persistent state dir, and a
 * kill -9 leaves it behind). Node has no flock(2), hence the recorded identity.
 */
export interface LockHolder {
  pid: number;
  /** Start time of the process in clock ticks since boot; undefined in a lock written by an older agent. */
  start?: number;
  boot?: string;
}

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Field 22 of /proc/PID/stat (after the command name, which may hold spaces and parentheses). */
export function processStartTime(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[22 - 3]);
    return Number.isFinite(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

export function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || undefined;
  } catch {
    return undefined;
  }
}

export function currentHolder(pid = process.pid): LockHolder {
  return { pid, start: processStartTime(pid), boot: bootId() };
}

/** Parse a lock file's text: the current JSON form, or a bare PID (older agents). Undefined if neither. */
export function parseHolder(text: string): LockHolder | undefined {
  const t = text.trim();
  if (/^\d{1,10}$/.test(t)) return { pid: Number(t) };
  try {
    const j = JSON.parse(t) as Record<string, unknown>;
    if (!Number.isInteger(j.pid) || (j.pid as number) <= 0) return undefined;
    return {
      pid: j.pid as number,
      start: typeof j.start === 'number' ? j.start : undefined,
      boot: typeof j.boot === 'string' ? j.boot : undefined,
    };
  } catch {
    return undefined;
  }
}

/** Whether the process that wrote `holder` is still running (not merely some process with its PID). */
export function holderAlive(holder: LockHolder): boolean {
  const start = processStartTime(holder.pid);
  if (start === undefined) return false; // no such process
  if (holder.start === undefined) {
    // A bare PID from an older agent: alive only if that PID is a wcf-agent now.
    try {
      return readFileSync(`/proc/${holder.pid}/cmdline`, 'latin1').includes('wcf-agent');
    } catch {
      return false;
    }
  }
  const boot = bootId();
  if (holder.boot !== undefined && boot !== undefined && holder.boot !== boot) return false;
  return start === holder.start;
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const buf = readStateFile(path, 4096);
    return buf === undefined ? undefined : parseHolder(buf.toString('latin1'));
  } catch (err) {
    if (err instanceof UnsafeStateFile) return undefined; // not a lock this agent wrote: stale
    throw err;
  }
}

let tempCounter = 0;

/**
 * Create the lock holding `me`, or answer false when it exists. Written whole under a name of its
 * own, then linked into place (link fails when the name exists): the lock is never there without
 * its holder in it. Created empty and then written, another process reading it in between took it
 * for garbage, removed it and took the lock too (two `allow` at once lost an update).
 */
function tryCreate(path: string, me: LockHolder): boolean {
  const temp = `${path}.new-${process.pid}-${++tempCounter}`;
  let fd: number;
  try {
    fd = openSync(temp, CREATE_FLAGS, 0o600);
  } catch (err) {
    throw new StateError(`cannot take the lock ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    try {
      writeSync(fd, JSON.stringify(me));
    } finally {
      closeSync(fd);
    }
    linkSync(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new StateError(`cannot take the lock ${path}: ${(err as Error).message}`, { cause: err });
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      /* gone */
    }
  }
}

/**
 * Locks this process holds now, by path, with how many of its jobs hold each. The daemon's
 * cycle holds the agent lock across its pull while its repairs and local overrides (one
 * after the other through its writer) apply in between: they share the hold, and the file
 * goes only when the last of them ends (the first to end removing it would let a manual
 * `sync` in while the cycle still runs).
 */
const heldHere = new Map<string, number>();

/** Create the lock file, or throw LockHeldError when another live process holds it. */
function take(path: string): void {
  const me = currentHolder();
  for (let attempt = 0; !tryCreate(path, me); attempt++) {
    const holder = readHolder(path);
    const mine = holder?.pid === me.pid && holder.start === me.start;
    if (holder && !mine && holderAlive(holder)) throw new LockHeldError(holder.pid, path);
    if (attempt > 0) throw new StateError(`cannot take the lock ${path}: it keeps coming back`);
    // Moved aside under a unique name, then removed: a symlink or FIFO is removed itself, never followed.
    const aside = `${path}.stale-${process.pid}`;
    try {
      renameSync(path, aside);
      // Another process may have replaced the stale lock with its own since it was read: that one goes back.
      if (JSON.stringify(readHolder(aside)) !== JSON.stringify(holder)) {
        try {
          linkSync(aside, path);
        } catch {
          /* a third process holds it now */
        }
      }
      unlinkSync(aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new StateError(`cannot remove the stale lock ${path}: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** One more hold of `path` by this process, taking the file first if it holds none. Synchronous: no job can slip in between. */
function hold(path: string): void {
  const n = heldHere.get(path);
  if (n === undefined) take(path);
  heldHere.set(path, (n ?? 0) + 1);
}

function release(path: string): void {
  const left = heldHere.get(path)! - 1;
  if (left > 0) {
    heldHere.set(path, left);
    return;
  }
  heldHere.delete(path);
  try {
    unlinkSync(path);
  } catch {
    /* already removed */
  }
}

/** How often a waiting withLock looks again. */
const RETRY_MS = 50;

/**
 * One cycle at a time per state dir (a manual `sync --once` while the daemon
 * runs would otherwise race it). A lock whose holder is gone (dead, rebooted,
 * PID reused) is taken over; so is a lock this very process wrote. Jobs of this
 * process share a lock it holds already (see heldHere). `name`: another lock file
 * in the same dir (the overrides store has its own, held only while it is rewritten).
 * `waitMs`: while another live process holds it, try again for this long before
 * failing with LockHeldError (commands an operator may run twice at once).
 */
export async function withLock<T>(stateDir: string, fn: () => Promise<T>, name = 'agent.lock', waitMs = 0): Promise<T> {
  const path = join(stateDir, name);
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      hold(path);
      break;
    } catch (err) {
      if (!(err instanceof LockHeldError) || Date.now() >= until) throw err;
    }
    await new Promise((r) => setTimeout(r, RETRY_MS));
  }
  try {
    return await fn();
  } finally {
    release(path);
  }
}

/** The live holder of the lock `name` in `stateDir`, or undefined when nobody (alive) holds it. Read-only. */
export function lockHolder(stateDir: string, name = 'agent.lock'): LockHolder | undefined {
  const holder = readHolder(join(stateDir, name));
  return holder && holderAlive(holder) ? holder : undefined;
}

/** Epoch seconds when process `pid` started: its start time in clock ticks after the boot time of /proc/stat. */
export function processStartedAt(holder: LockHolder): number | undefined {
  if (holder.start === undefined) return undefined;
  try {
    const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'latin1'))?.[1];
    // USER_HZ is 100 on every Linux architecture the agent ships for (the kernel fixes it for /proc).
    return btime === undefined ? undefined : Number(btime) + Math.floor(holder.start / 100);
  } catch {
    return undefined;
  }
}
