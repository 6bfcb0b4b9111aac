import { CidrIndex } from '../net/cidr-index.js';
import { EntryColumns } from './entry-columns.js';
import { MAX_KERNEL_TIMEOUT_S } from './entries.js';

/**
 * A kernel timeout is "the same" as the wanted one within this many seconds.
 * The wanted timeout is computed by the caller a moment before the kernel's
 * remaining time is read, so the two differ by that moment plus rounding.
 * Clamped timeouts (MAX_KERNEL_TIMEOUT_S) drift further than this between
 * cycles; they are refreshed once the kernel's remaining time falls below
 * CLAMP_REFRESH_S, which keeps a long block alive past the clamp.
 */
export const TIMEOUT_TOLERANCE_S = 5;

/**
 * An entry whose wanted timeout is clamped (it should outlive the kernel's
 * 24.8-day limit) is refreshed once the kernel holds it for less than half the
 * clamp (12.4 days), not every cycle: refreshed every cycle, a feed of
 * long-lived blocks rewrote the whole set each cycle (a million elements
 * re-sent when nothing had changed). Half the clamp leaves twelve days of
 * cycles to refresh it before it could lapse.
 */
export const CLAMP_REFRESH_S = Math.floor(MAX_KERNEL_TIMEOUT_S / 2);

/**
 * Above either threshold a change is applied as a full rebuild (ipset: build a
 * temp set, swap) instead of a delta; nftables reports such a change as full but
 * sends a delta all the same, in runs (its networks' set pays a refill by the
 * whole set's size in one long transaction: see nft/write.ts). A delta
 * costs time in proportion to the change, a rebuild in proportion to the whole
 * set, so a delta pays while the change is well under the set's size: growing a
 * 60,000-entry set by 10,000 is 10,000 restore lines, not 70,000 and a swap. An
 * ipset delta is applied line by line, but a failure midway is rolled back by
 * the plugin (atomically, through the temp set), and while it runs the set only
 * holds a mix of old and new entries that are each wanted at one of the two
 * moments. The absolute cap keeps one delta script (and its memory) bounded.
 */
export const DELTA_MAX_CHANGES = 500_000;
export const DELTA_MAX_RATIO = 0.5;

export interface EntryDiff {
  /** New entries and entries whose timeout changes (to be (re-)added with the wanted timeout), in wanted order. */
  readonly add: EntryColumns;
  /** Entries present now and not wanted, in the kernel's order. */
  readonly del: EntryColumns;
  readonly added: number;
  readonly updated: number;
  readonly removed: number;
}

export function timeoutsDiffer(current: number | undefined, wanted: number | undefined): boolean {
  return differs(current ?? NaN, wanted ?? NaN);
}

/** The same test on columns' values (NaN = no timeout). */
export function differs(current: number, wanted: number): boolean {
  const cn = Number.isNaN(current);
  const wn = Number.isNaN(wanted);
  if (cn || wn) return cn !== wn;
  if (wanted >= MAX_KERNEL_TIMEOUT_S && current >= CLAMP_REFRESH_S) return false;
  return Math.abs(current - wanted) > TIMEOUT_TOLERANCE_S;
}

const SAME = 1;
const CHANGED = 2;

/**
 * Compare the kernel's entries (remaining seconds) with the wanted ones (distinct networks), both
 * as columns, by network address and prefix (a typed hash over the wanted ones: no string per entry).
 * `readAgeS`: seconds since the kernel was read (a read made while the API calls ran); the
 * remaining times have run down by that much since, and are compared as they are now.
 */
export function diffEntries(current: EntryColumns, wanted: EntryColumns, readAgeS = 0): EntryDiff {
  if (current.length === 0) {
    // First fill: everything is new (no bookkeeping needed for a million entries).
    return { add: wanted, del: new EntryColumns(1), added: wanted.length, updated: 0, removed: 0 };
  }
  const index = new CidrIndex(wanted.length);
  for (let i = 0; i < wanted.length; i++) index.add(wanted.starts[i]!, wanted.prefixes[i]!, i);
  // Per wanted entry: 0 = not in the kernel, SAME, or CHANGED (its timeout differs).
  const seen = new Uint8Array(wanted.length);
  // Per kernel entry: 1 = not wanted (to delete).
  const unwanted = new Uint8Array(current.length);
  let removed = 0;
  for (let i = 0; i < current.length; i++) {
    const j = index.get(current.starts[i]!, current.prefixes[i]!);
    if (j === -1) {
      unwanted[i] = 1;
      removed++;
      continue;
    }
    if (seen[j] !== 0) continue; // listed twice: the first one decides
    seen[j] = differs(current.timeouts[i]! - readAgeS, wanted.timeouts[j]!) ? CHANGED : SAME;
  }
  index.release();
  // Both lists sized exactly (a million entries grown by doubling left every smaller copy behind).
  const del = new EntryColumns(removed);
  for (let i = 0; i < current.length; i++) if (unwanted[i] === 1) del.push(current.starts[i]!, current.prefixes[i]!, undefined);
  let added = 0;
  let updated = 0;
  for (let j = 0; j < wanted.length; j++) {
    if (seen[j] === 0) added++;
    else if (seen[j] === CHANGED) updated++;
  }
  // Every wanted entry changes (a refill): the wanted columns themselves, not a copy of them.
  if (added + updated === wanted.length) return { add: wanted, del, added, updated, removed };
  const add = new EntryColumns(added + updated);
  for (let j = 0; j < wanted.length; j++) if (seen[j] !== SAME) add.push(wanted.starts[j]!, wanted.prefixes[j]!, wanted.timeoutAt(j));
  return { add, del, added, updated, removed };
}

/** Free the lists of changes now (a full rebuild writes the wanted entries, not them); `wanted` is kept when it is the add list. */
export function releaseChanges(diff: EntryDiff, wanted: EntryColumns): void {
  if (diff.add !== wanted) diff.add.release();
  diff.del.release();
}

export function changeCount(d: Pick<EntryDiff, 'added' | 'updated' | 'removed'>): number {
  return d.added + d.updated + d.removed;
}

/** `none` when nothing changes, `full` for first fills, forced rebuilds and large changes, else `delta`. */
export function chooseMode(d: Pick<EntryDiff, 'added' | 'updated' | 'removed'>, currentSize: number, wantedSize: number, forceFull: boolean): 'full' | 'delta' | 'none' {
  const changes = changeCount(d);
  if (forceFull) return 'full';
  if (changes === 0) return 'none';
  if (changes > DELTA_MAX_CHANGES || changes > DELTA_MAX_RATIO * Math.max(currentSize, wantedSize)) return 'full';
  return 'delta';
}
