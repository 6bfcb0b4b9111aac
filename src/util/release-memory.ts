import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** V8's collector, asked for once; null when this Node cannot give it. */
let collector: Collect | null | undefined;

/**
 * V8's `gc` function without the --expose-gc flag: the flag would change V8's flag hash, and
 * the single binary's code cache (made without it) would be rejected at every start. The flag
 * is set for one moment, a new context picks up the function (the constant name `gc`: nothing
 * from outside is ever evaluated here), and the flag is put back.
 */
function getCollector(): Collect | null {
  if (collector !== undefined) return collector;
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as unknown;
    collector = typeof gc === 'function' ? (gc as Collect) : null;
  } catch {
    collector = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return collector;
}

/**
 * After a cycle, give back to the system the memory the cycle used. V8 (Node 24) neither
 * collects a large cycle's garbage while the daemon sleeps (its memory reducer sees no idle
 * time) nor returns freed heap pages to the kernel after an ordinary collection: a
 * million-entry cycle left the daemon holding over a gigabyte it no longer used. A
 * "last resort" collection does both, in a few milliseconds for the heap left between
 * cycles of 10,000 entries and 100-200 ms after a million-entry cycle.
 */
export function releaseCycleMemory(): void {
  getCollector()?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** A feed from this size on makes a pull's garbage worth a collection in the middle of the cycle. */
const LARGE_FEED = 100_000;

/**
 * After a large pull, before the selection and the apply allocate their columns: what the pull
 * left is garbage by then (every page parsed into objects, about 450 MB allocated for a million
 * indicators, and the kernel listing read meanwhile as text), and V8 neither collected it soon
 * enough nor gave back the pages it freed, so it stayed resident under the apply's own peak.
 * Tens of milliseconds at a million; small feeds skip it.
 */
export function releaseAfterLargePull(feeds: { feed: { size: number } }): void {
  if (feeds.feed.size >= LARGE_FEED) releaseCycleMemory();
}
