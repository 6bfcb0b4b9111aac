import { RangeSet, mustParseCidr, type Cidr } from '../net/ipv4.js';

/** Why an address is protected; shown by `doctor` and in the log when an entry is dropped. */
export type ProtectedSource =
  | 'loopback'
  | 'this_network'
  | 'own_address'
  | 'allowlist'
  | 'api_server'
  | 'api_server_last_known'
  | 'proxy'
  | 'resolver'
  | 'gateway'
  | 'link_local'
  | 'multicast'
  | 'reserved'
  | 'ssh_session';

export interface ProtectedMember {
  readonly cidr: Cidr;
  readonly source: ProtectedSource;
  /** Where it came from, for people (`/etc/resolv.conf`, `proxy`, `root from pts/0`, ...). */
  readonly detail?: string;
}

/**
 * Ranges no host should ever block, whatever the feed or the host says: the
 * agent's own loopback, "this network", link-local (cloud metadata, on some
 * clouds also DNS), multicast, and the reserved class E with the broadcast
 * address.
 */
export const BUILT_IN_PROTECTED: readonly ProtectedMember[] = [
  { cidr: mustParseCidr('127.0.0.0/8', 'loopback'), source: 'loopback' },
  { cidr: mustParseCidr('0.0.0.0/8', 'this_network'), source: 'this_network' },
  { cidr: mustParseCidr('169.254.0.0/16', 'link_local'), source: 'link_local' },
  { cidr: mustParseCidr('224.0.0.0/4', 'multicast'), source: 'multicast' },
  { cidr: mustParseCidr('240.0.0.0/4', 'reserved'), source: 'reserved', detail: 'incl. 255.255.255.255' },
];

/**
 * The protected set, indexed for the two questions every write asks: does
 * this network overlap a member (merged ranges, binary search), and which
 * member (only asked for the rare entry that does).
 */
export class ProtectedSet {
  readonly members: readonly ProtectedMember[];
  /** The members' ranges, merged (the selection's hot loop asks this directly). */
  readonly ranges: RangeSet;

  constructor(members: Iterable<ProtectedMember>) {
    this.members = [...members];
    this.ranges = new RangeSet(this.members.map((m) => m.cidr));
  }

  /** Built-in ranges plus bare networks (tests, and callers with no source to name). */
  static of(cidrs: readonly Cidr[], source: ProtectedSource = 'allowlist'): ProtectedSet {
    return new ProtectedSet([...BUILT_IN_PROTECTED, ...cidrs.map((cidr) => ({ cidr, source }))]);
  }

  overlaps(c: { start: number; end: number }): boolean {
    return this.ranges.overlaps(c);
  }

  /** The first member overlapping `c` (the most specific one when several do), or undefined. */
  memberFor(c: { start: number; end: number }): ProtectedMember | undefined {
    if (!this.ranges.overlaps(c)) return undefined;
    let best: ProtectedMember | undefined;
    for (const m of this.members) {
      if (m.cidr.start <= c.end && c.start <= m.cidr.end && (best === undefined || m.cidr.prefix > best.cidr.prefix)) best = m;
    }
    return best;
  }
}

export interface FilterResult<E> {
  readonly kept: E[];
  readonly removed: { entry: E; member: ProtectedMember }[];
}

/**
 * Drop every entry that overlaps a protected member (a /24 holding a
 * protected address goes too: blocking it would block the address). Pure;
 * the order of the kept entries is the input's. The last filter before any
 * write of the blocked set, wherever the entries come from.
 */
export function filterProtected<E>(entries: readonly E[], set: ProtectedSet, cidrOf: (e: E) => { start: number; end: number } | undefined): FilterResult<E> {
  const kept: E[] = [];
  const removed: { entry: E; member: ProtectedMember }[] = [];
  for (const e of entries) {
    const c = cidrOf(e);
    const member = c === undefined ? undefined : set.memberFor(c);
    if (member) removed.push({ entry: e, member });
    else kept.push(e);
  }
  return { kept, removed };
}
