import { hitsSetName, sides, type Direction } from '../../direction.js';
import { ownerMark } from '../../ownership.js';

/**
 * The agent's sets and their definitions, written once here for every use: the table's creation,
 * an in-place repair that adds a set, and the probe that asks the kernel whether a set is there
 * *with this definition* (`add set` of an existing set succeeds only when the kernel finds it the
 * same: key, flags, size, timeout and counter alike; otherwise "File exists"). So every field
 * that differs between two versions of a set must be spelled out here.
 */

/** Most addresses each hits set records; an address hit once the set is full is still blocked, only not counted. */
export const NFT_HITS_SIZE = 65536;
/** An address not hit for this long leaves its hits set (the agent keeps its running total). */
export const HITS_TIMEOUT_S = 7 * 86400;

/** The flags of the set of addresses and of the set of networks. */
export const HOSTS_FLAGS = 'timeout';
export const NETS_FLAGS = 'interval,timeout';
/** The key of the networks' set (see NftParts). */
export const NETS_TYPEOF = 'ip saddr . meta nfproto';

/**
 * The drop counter as a set: every blocking rule updates its one element (the key is the packet's
 * family, always ipv4 here), whose counter then holds the total blocked. Not a rule counter:
 * nft 1.0.x fetches every element of every set to list any rule, chain or named counter (a
 * minute and 645 MB at a million entries, each scrape), but lists one named set on its own, and
 * this one has a single element (0.01 s, 4 MB at any size).
 */
export const DROPS_BODY = ['typeof meta nfproto', 'size 4', 'flags dynamic', 'counter'];

/** What of a layout (text.ts) names and shapes the sets. */
interface SetsOf {
  readonly set: string;
  readonly nets: string;
  readonly drops: string;
  readonly direction: Direction;
  readonly instance?: string;
}

export interface NftSetDef {
  readonly name: string;
  /** The definition's statements, in nft syntax, one per entry. */
  readonly body: readonly string[];
  /** Holds the entries (addresses or networks): never re-created while it enforces. */
  readonly entries: boolean;
}

/** Every set of the layout, in the order the table declares them (entries first). */
export function setDefs(l: SetsOf): NftSetDef[] {
  return [
    { name: l.set, body: ['type ipv4_addr', `flags ${HOSTS_FLAGS}`], entries: true },
    { name: l.nets, body: [`typeof ${NETS_TYPEOF}`, `flags ${NETS_FLAGS}`], entries: true },
    { name: l.drops, body: DROPS_BODY, entries: false },
    // Dynamic sets: an address enters on its first blocked packet, so addresses never hit cost nothing.
    ...sides(l.direction).map((s) => ({
      name: hitsSetName(l.set, s),
      body: ['type ipv4_addr', `size ${NFT_HITS_SIZE}`, 'flags dynamic,timeout', `timeout ${HITS_TIMEOUT_S}s`, 'counter'],
      entries: false,
    })),
  ];
}

/** `{ type ...; flags ...; comment "wcf-agent ..."; }`: a set's definition on one line, marked as the agent's. */
export function setDefLine(l: SetsOf, def: NftSetDef): string {
  return `{ ${[...def.body, `comment "${ownerMark(l.instance)}"`].join('; ')}; }`;
}
