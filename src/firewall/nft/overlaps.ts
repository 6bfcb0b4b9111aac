import { CidrIndex, rangeToCidrs } from '../../net/cidr-index.js';
import { EntryColumns } from '../entry-columns.js';

/**
 * Whether any entry lies inside another (entries are distinct CIDRs), without
 * sorting: for each entry, look up its enclosing networks at the prefix
 * lengths present in the list (usually two or three: /32, /24...). O(n).
 */
export function hasOverlap(entries: EntryColumns): boolean {
  const { starts, prefixes } = entries;
  const present = new Set<number>();
  for (let i = 0; i < entries.length; i++) present.add(prefixes[i]!);
  if (present.size < 2) return false;
  const sorted = [...present].sort((a, b) => a - b);
  const index = new CidrIndex(entries.length);
  for (let i = 0; i < entries.length; i++) index.add(starts[i]!, prefixes[i]!, i);
  for (let i = 0; i < entries.length; i++) {
    for (const p of sorted) {
      if (p >= prefixes[i]!) break;
      const start = p === 0 ? 0 : (starts[i]! & ((0xffffffff << (32 - p)) >>> 0)) >>> 0;
      if (index.get(start, p) !== -1) return true;
    }
  }
  return false;
}

/**
 * Make entries non-overlapping for nft, keeping exactly ipset's semantics
 * ("an address is blocked while any entry covering it is alive").
 *
 * An nft interval set cannot hold a /32 inside a /24 (the kernel refuses
 * overlapping intervals), and `auto-merge` is no answer: it merges
 * overlapping *and adjacent* intervals across different timeouts (a permanent
 * /25 next to a timed /25 becomes one timed /24: the permanent block would
 * expire), and makes `nft` read the whole set on every change. So the plugin
 * uses no auto-merge and resolves overlaps here:
 *
 * - a narrower entry covered by a wider one that lives at least as long is
 *   dropped (it adds nothing);
 * - a narrower entry that outlives its cover (e.g. a permanent manual /32
 *   inside a scored /24 with a timeout) is kept, and the wider entry is split
 *   into the CIDRs around it, each with the wider entry's timeout. Extending
 *   the /24's timeout instead would over-block 255 addresses; dropping the /32
 *   would unblock it when the /24 expires.
 *
 * CIDRs nest or are disjoint, so this is a walk over the sorted list with a
 * stack of enclosing entries: O(n log n) for the sort, O(n) after. Without
 * overlaps (checked in O(n)) the input comes back as it is. All on columns: a
 * million entries with a few nested ones make no object per entry.
 */
export function resolveOverlaps(columns: EntryColumns): EntryColumns {
  if (!hasOverlap(columns)) return columns;
  const n = columns.length;
  const { starts, prefixes, timeouts } = columns;
  // Sorted by address, then wider first: one exact number per network (start * 64 + prefix),
  // sorted natively; each is found again by its network to read its timeout.
  const keys = new Float64Array(n);
  for (let i = 0; i < n; i++) keys[i] = starts[i]! * 64 + prefixes[i]!;
  keys.sort();
  const index = new CidrIndex(n);
  for (let i = 0; i < n; i++) index.add(starts[i]!, prefixes[i]!, i);
  const endOf = (i: number) => starts[i]! + 2 ** (32 - prefixes[i]!) - 1;
  const lifeOf = (i: number) => (Number.isNaN(timeouts[i]!) ? Infinity : timeouts[i]!);

  const out = new EntryColumns(n);
  const emitRange = (from: number, to: number, timeout: number) => {
    for (const c of rangeToCidrs(from, to)) out.push(c.start, c.prefix, Number.isNaN(timeout) ? undefined : timeout);
  };
  // The enclosing entries kept so far, and for each the next address of it not yet emitted
  // (only moved once a narrower entry inside it is kept, which splits it).
  const stack: number[] = [];
  const cursor: number[] = [];
  const split: boolean[] = [];
  const close = () => {
    const top = stack.pop()!;
    const from = cursor.pop()!;
    if (!split.pop()) out.push(starts[top]!, prefixes[top]!, columns.timeoutAt(top));
    else if (from <= endOf(top)) emitRange(from, endOf(top), timeouts[top]!);
  };
  for (let k = 0; k < n; k++) {
    const key = keys[k]!;
    const prefix = key % 64;
    const start = (key - prefix) / 64;
    const i = index.get(start, prefix);
    while (stack.length > 0 && endOf(stack[stack.length - 1]!) < start) close();
    const depth = stack.length - 1;
    const parent = depth >= 0 ? stack[depth]! : -1;
    if (parent !== -1 && lifeOf(i) <= lifeOf(parent)) continue; // covered by a wider entry that lives at least as long
    if (parent !== -1) {
      // The narrower entry outlives its cover: the cover is emitted around it.
      if (cursor[depth]! < start) emitRange(cursor[depth]!, start - 1, timeouts[parent]!);
      cursor[depth] = endOf(i) + 1;
      split[depth] = true;
    }
    stack.push(i);
    cursor.push(start);
    split.push(false);
  }
  while (stack.length > 0) close();
  return out;
}

/** Entries for the agent's two nft sets: addresses as they are, networks without overlaps among themselves (see NftParts). */
export function resolveNetOverlaps(columns: EntryColumns): EntryColumns {
  let nets = 0;
  for (let i = 0; i < columns.length; i++) if (columns.prefixes[i] !== 32) nets++;
  if (nets < 2) return columns;
  const hosts = new EntryColumns(columns.length - nets);
  const netCols = new EntryColumns(nets);
  for (let i = 0; i < columns.length; i++) (columns.prefixes[i] === 32 ? hosts : netCols).push(columns.starts[i]!, columns.prefixes[i]!, columns.timeoutAt(i));
  const resolved = resolveOverlaps(netCols);
  for (let i = 0; i < resolved.length; i++) hosts.push(resolved.starts[i]!, resolved.prefixes[i]!, resolved.timeoutAt(i));
  return hosts;
}
