import { toCidr } from '../net/ipv4.js';
import { CidrIndex } from '../net/cidr-index.js';
import type { KernelEntry } from './entries.js';

/**
 * A kernel timeout is "the same" as the wanted one within this many seconds.
 * The wanted timeout is computed by the caller a moment before the kernel's
 * remaining time is read, so the two differ by that moment plus rounding.
 * Clamped timeouts (MAX_KERNEL_TIMEOUT_S) drift further than this between
 * cycles and are therefore refreshed every cycle, which is what keeps a long
 * block alive past the clamp.
 */
export const TIMEOUT_TOLERANCE_S = 5;

/**
 * Above either threshold a change is applied as a full rebuild (ipset: build a
 * temp set, swap; nft: refill in one transaction) instead of a delta. A delta
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
  /** New entries and entries whose timeout changes (to be (re-)added with the wanted timeout). */
  readonly add: KernelEntry[];
  /** CIDRs present now and not wanted. */
  readonly del: string[];
  readonly added: number;
  readonly updated: number;
  readonly removed: number;
}

export function timeoutsDiffer(current: number | undefined, wanted: number | undefined): boolean {
  if (current === undefined || wanted === undefined) return current !== wanted;
  return Math.abs(current - wanted) > TIMEOUT_TOLERANCE_S;
}

/**
 * Compare the kernel's entries (CIDR -> remaining seconds) with the wanted ones (distinct CIDRs).
 * `readAgeS`: seconds since the kernel was read (a read made while the API calls ran); the
 * remaining times have run down by that much since, and are compared as they are now.
 */
export function diffEntries(current: ReadonlyMap<string, number | undefined>, wanted: readonly KernelEntry[], readAgeS = 0): EntryDiff {
  if (current.size === 0) {
    // First fill: everything is new (no bookkeeping needed for a million entries).
    return { add: [...wanted], del: [], added: wanted.length, updated: 0, removed: 0 };
  }
  const add: KernelEntry[] = [];
  const del: string[] = [];
  let added = 0;
  let updated = 0;
  let matched = 0;
  for (const e of wanted) {
    const key = e.cidr.text;
    const remaining = current.get(key);
    if (remaining === undefined && !current.has(key)) {
      add.push(e);
      added++;
      continue;
    }
    matched++;
    if (timeoutsDiffer(remaining === undefined ? undefined : remaining - readAgeS, e.timeout)) {
      add.push(e);
      updated++;
    }
  }
  if (matched < current.size) {
    // Kernel keys are canonical text, so nearly every kept key is found by its text
    // (whose hash the lookups above already computed); only the others are parsed
    // and looked up by network, which is what decides.
    const wantedTexts = new Set<string>();
    for (const e of wanted) wantedTexts.add(e.cidr.text);
    let index: CidrIndex | undefined;
    for (const key of current.keys()) {
      if (wantedTexts.has(key)) continue;
      if (!index) {
        index = new CidrIndex(wanted.length);
        for (let i = 0; i < wanted.length; i++) index.add(wanted[i]!.cidr.start, wanted[i]!.cidr.prefix, i);
      }
      const c = toCidr(key);
      if (!c || index.get(c.start, c.prefix) === -1) del.push(key);
    }
  }
  return { add, del, added, updated, removed: del.length };
}

export function changeCount(d: EntryDiff): number {
  return d.added + d.updated + d.removed;
}

/** `none` when nothing changes, `full` for first fills, forced rebuilds and large changes, else `delta`. */
export function chooseMode(d: EntryDiff, currentSize: number, wantedSize: number, forceFull: boolean): 'full' | 'delta' | 'none' {
  const changes = changeCount(d);
  if (forceFull) return 'full';
  if (changes === 0) return 'none';
  if (changes > DELTA_MAX_CHANGES || changes > DELTA_MAX_RATIO * Math.max(currentSize, wantedSize)) return 'full';
  return 'delta';
}
