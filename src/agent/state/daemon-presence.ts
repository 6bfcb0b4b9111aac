import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../../errors.js';
import { writeFileAtomic } from '../../util/atomic-file.js';
import { currentHolder, holderAlive, parseHolder, processStartedAt, type LockHolder } from './lock.js';
import { readStateFile, UnsafeStateFile } from '../../util/untrusted-file.js';

/**
 * Whether a daemon serves this state dir. The agent lock is held only while a
 * cycle runs, so between cycles it says nothing; the daemon therefore also
 * writes `daemon.pid` for its whole life, with the same identity as the lock
 * (PID, process start time, boot id), so a file left by a killed daemon, or a
 * PID reused since, is not mistaken for a running one.
 */
const FILE = 'daemon.pid';

export interface DaemonPresence {
  pid: number;
  /** Epoch s the daemon process started, when /proc tells. */
  startedAt?: number;
}

export function markDaemon(stateDir: string): void {
  try {
    writeFileAtomic(join(stateDir, FILE), JSON.stringify(currentHolder()));
  } catch (err) {
    throw new StateError(`cannot write ${join(stateDir, FILE)}: ${(err as Error).message}`, { cause: err });
  }
}

export function unmarkDaemon(stateDir: string): void {
  try {
    unlinkSync(join(stateDir, FILE));
  } catch {
    /* already gone */
  }
}

/** The running daemon of this state dir, or undefined. Read-only. */
export function runningDaemon(stateDir: string): DaemonPresence | undefined {
  let holder: LockHolder | undefined;
  try {
    const buf = readStateFile(join(stateDir, FILE), 4096);
    holder = buf === undefined ? undefined : parseHolder(buf.toString('latin1'));
  } catch (err) {
    if (err instanceof UnsafeStateFile) return undefined;
    throw err;
  }
  // A bare PID is not an identity here: only the daemon's own JSON counts.
  if (!holder || holder.start === undefined || !holderAlive(holder)) return undefined;
  const startedAt = processStartedAt(holder);
  return { pid: holder.pid, ...(startedAt !== undefined ? { startedAt } : {}) };
}
