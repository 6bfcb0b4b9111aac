import { join } from 'node:path';
import { LockHeldError } from '../../errors.js';
import { lookAtLock, takeLock, type HeldLock, type LockHolder } from './flock.js';

export type { LockHolder } from './flock.js';

/**
 * Locks this process holds or is taking, by path, with how many of its jobs hold each.
 * The daemon's cycle holds the agent lock across its pull while its repairs and local
 * overrides (one after the other through its writer) apply in between: they share the
 * hold, and the lock goes only when the last of them ends (the first to end letting go
 * would let a manual `sync` in while the cycle still runs). A job arriving while the
 * lock is being taken waits for that take rather than starting a second one: the kernel
 * lock belongs to one open file, and a second open file of the same process would
 * conflict with the first.
 */
interface Hold {
  count: number;
  lock: HeldLock | undefined;
  taking: Promise<void>;
}
const heldHere = new Map<string, Hold>();

/** One more hold of `path` by this process, taking the lock first if it holds none. */
async function hold(path: string, waitMs: number): Promise<void> {
  const shared = heldHere.get(path);
  if (shared) {
    shared.count++;
    try {
      await shared.taking;
    } catch (err) {
      shared.count--;
      throw err;
    }
    return;
  }
  const mine: Hold = { count: 1, lock: undefined, taking: Promise.resolve() };
  // Registered before the first await, so a job arriving meanwhile shares this take.
  mine.taking = takeLock(path, waitMs).then((lock) => {
    mine.lock = lock;
  });
  heldHere.set(path, mine);
  try {
    await mine.taking;
  } catch (err) {
    heldHere.delete(path);
    throw err;
  }
}

function release(path: string): void {
  const h = heldHere.get(path);
  if (!h) return;
  if (--h.count > 0) return;
  heldHere.delete(path);
  h.lock?.release();
}

/**
 * One cycle at a time per state dir (a manual `sync --once` while the daemon runs would
 * otherwise race it). A kernel lock (flock(2), see flock.ts): it dies with its holder,
 * however that ends, and is seen from every PID namespace, so a `sync` in a container on
 * the host's state path waits for the host's daemon like any other. Jobs of this process
 * share a lock it holds already (see heldHere). `name`: another lock file in the same dir
 * (the overrides store has its own, held only while it is rewritten). `waitMs`: while
 * another process holds it, wait this long for it before failing with LockHeldError
 * (commands an operator may run twice at once).
 */
export async function withLock<T>(stateDir: string, fn: () => Promise<T>, name = 'agent.lock', waitMs = 0): Promise<T> {
  const path = join(stateDir, name);
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      await hold(path, Math.max(0, until - Date.now()));
      break;
    } catch (err) {
      // A job that shared another job's take, which gave up sooner than this one would: try again.
      if (!(err instanceof LockHeldError) || Date.now() >= until) throw err;
    }
  }
  try {
    return await fn();
  } finally {
    release(path);
  }
}

/**
 * Who holds the lock `name` in `stateDir` now, or undefined when nobody does. `holder` is
 * undefined for a holder that wrote no identity (yet). Read-only.
 */
export async function lockHolder(stateDir: string, name = 'agent.lock'): Promise<{ holder: LockHolder | undefined } | undefined> {
  return lookAtLock(join(stateDir, name));
}
