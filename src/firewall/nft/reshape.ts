import { EntryColumns } from '../entry-columns.js';

/** Added and deleted networks that overlap each other, directly or through one another. */
export interface ReshapeGroup {
  readonly add: EntryColumns;
  readonly del: EntryColumns;
}

/** A delta of the networks' set, split by what the kernel accepts in which order. */
export interface NetsDelta {
  /** Added networks overlapping no deleted one: they can go in before anything is deleted. */
  readonly add: EntryColumns;
  /** Deleted networks overlapping no added one: they can go after everything is added. */
  readonly del: EntryColumns;
  /**
   * The rest: a wider network split around a narrower one, pieces merged back, a network
   * replaced by an overlapping one. The kernel refuses an added interval that overlaps one
   * still in the set, but not one deleted earlier in the same transaction, so each group is one
   * transaction, its deletions first: addresses the old and the new shapes both cover stay
   * blocked throughout.
   */
  readonly groups: readonly ReshapeGroup[];
}

/**
 * Split a delta of the networks' set (`add` and `del` each free of overlaps among themselves,
 * as the set holds them) into what needs no other change and the groups that reshape
 * intervals. One sort of both lists by start and one sweep: the items of a group are
 * consecutive in that order, each starting before the group's furthest end so far.
 */
export function splitNetsDelta(add: EntryColumns, del: EntryColumns): NetsDelta {
  if (add.length === 0 || del.length === 0) return { add, del, groups: [] };
  const n = add.length + del.length;
  // Positions below add.length name an added network, the rest a deleted one.
  const at = (k: number): [EntryColumns, number] => (k < add.length ? [add, k] : [del, k - add.length]);
  const startOf = (k: number) => (k < add.length ? add.starts[k]! : del.starts[k - add.length]!);
  const endOf = (k: number) => (k < add.length ? add.endAt(k) : del.endAt(k - add.length));
  const order = Array.from({ length: n }, (_, k) => k).sort((x, y) => startOf(x) - startOf(y));
  const pureAdd = new EntryColumns(add.length);
  const pureDel = new EntryColumns(del.length);
  const groups: ReshapeGroup[] = [];
  const push = (to: EntryColumns, k: number) => {
    const [c, i] = at(k);
    to.push(c.starts[i]!, c.prefixes[i]!, c.timeoutAt(i));
  };
  for (let from = 0; from < n; ) {
    let to = from + 1;
    let end = endOf(order[from]!);
    let adds = order[from]! < add.length ? 1 : 0;
    while (to < n && startOf(order[to]!) <= end) {
      end = Math.max(end, endOf(order[to]!));
      if (order[to]! < add.length) adds++;
      to++;
    }
    const size = to - from;
    if (adds === size) for (let k = from; k < to; k++) push(pureAdd, order[k]!);
    else if (adds === 0) for (let k = from; k < to; k++) push(pureDel, order[k]!);
    else {
      const g = { add: new EntryColumns(adds), del: new EntryColumns(size - adds) };
      for (let k = from; k < to; k++) push(order[k]! < add.length ? g.add : g.del, order[k]!);
      groups.push(g);
    }
    from = to;
  }
  return { add: pureAdd, del: pureDel, groups };
}
