import type { NftLayout } from '../text.js';

/**
 * The shadow table: a complete copy of the agent's table, under this name, built and hooked
 * before the agent's own table is deleted and built again, then removed. It is needed only when a
 * set that holds the entries must change its definition (an upgrade that changes a set's type,
 * or an earlier version's table), which the kernel cannot do to a set in place: while the old
 * table is deleted and the new one filled, the shadow's chains, at the same hooks and priority,
 * drop what both drop. A shadow found on its own (the agent stopped half way) is removed once the
 * agent's table is whole again.
 */
export function shadowName(l: NftLayout): string {
  return `${l.table}_next`;
}

/** The layout of the shadow table: the agent's own, under the shadow's name. */
export function shadowLayout(l: NftLayout): NftLayout {
  return { ...l, table: shadowName(l) };
}
