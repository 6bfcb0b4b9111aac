import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DaemonRunningError, errorMessage, LockHeldError, StateError } from '../../errors.js';
import { describeHolder, inOtherPidNamespace, lookAtLock, takeLock, type HeldLock } from './flock.js';

/**
 * One daemon per state dir. `run` takes a kernel lock (flock(2), see flock.ts) on
 * `daemon.pid` before it does anything, holds it for its whole life and writes its
 * identity (PID, PID namespace, start time) in it. The lock, not the file's text, says
 * whether a daemon runs: it is seen from every PID namespace (a container on the host's
 * state path, or the host looking at a container's), and it goes when the daemon ends,
 * a kill -9 included. So a second `run` is refused before it touches the firewall, and
 * no command ever removes the file: a stale identity is simply not believed while
 * nobody holds the lock (and the next daemon writes its own).
 */
const FILE = 'daemon.pid';

export interface DaemonPresence {
  /** The daemon's PID in its own PID namespace; undefined in the moment before it wrote it. */
  pid: number | undefined;
  /** Epoch s the daemon process started, when it recorded it. */
  startedAt?: number;
  /** It runs in another PID namespace than this process (its PID is not this one's to signal). */
  otherPidNamespace: boolean;
  /** "pid 123", with the PID namespace when it is another. */
  who: string;
}

/**
 * Claim the state dir for this daemon, or fail at once with DaemonRunningError (exit 4)
 * naming the daemon that serves it. Held until release() or the process's end.
 */
export async function claimDaemon(stateDir: string): Promise<HeldLock> {
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 }); // first use: nothing else is read or written before the claim
  } catch (err) {
    throw new StateError(`cannot create state_dir ${stateDir}: ${errorMessage(err)}`, { cause: err });
  }
  try {
    return await takeLock(join(stateDir, FILE), 0);
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err;
    throw new DaemonRunningError(
      `another wcf-agent daemon (${err.who}) already serves ${stateDir}; one daemon per state directory: stop that one first (systemctl stop wcf-agent), or give this one its own state_dir`,
      err.holder,
    );
  }
}

/** The running daemon of this state dir, or undefined. Read-only. */
export async function runningDaemon(stateDir: string): Promise<DaemonPresence | undefined> {
  const held = await lookAtLock(join(stateDir, FILE));
  if (!held) return undefined;
  const h = held.holder;
  return {
    pid: h?.pid,
    ...(h?.startedAt !== undefined ? { startedAt: h.startedAt } : {}),
    otherPidNamespace: h !== undefined && inOtherPidNamespace(h),
    who: describeHolder(h),
  };
}

/** Refuse a command that a running daemon would undo or fight, naming the daemon and how to stop it. */
export async function refuseWhileDaemonRuns(stateDir: string, what: string): Promise<void> {
  const d = await runningDaemon(stateDir);
  if (!d) return;
  throw new DaemonRunningError(
    `a wcf-agent daemon (${d.who}) serves ${stateDir} and would undo ${what} within seconds; nothing was changed. Stop it first (systemctl stop wcf-agent), then run this again`,
    d.pid,
  );
}
