import { EntryColumns } from '../entry-columns.js';
import { ENTRY_LINE_MAX, TextBuilder } from '../../util/text-builder.js';
import { directionHooks, hitsSetName, sides, type Direction, type Side } from '../direction.js';
import type { PluginOptions } from '../plugin.js';
import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from '../log-prefix.js';
import { ownerMark } from '../ownership.js';
import { setDefs, type NftSetDef } from './table/sets.js';

/** nft script text (pure): the agent's table, refill and delta transactions, and the set read back from `nft -j`. */


/**
 * Priority of the agent's base chains in the filter stage (drop_hook `filter`, and REJECT): just
 * before `filter` (0), where iptables-nft's own chains, firewalld and ufw sit. In nftables every
 * base chain on a hook sees the packet and a drop anywhere is final, so this is not about winning
 * over their accepts: dropping first means blocked packets cost nothing in (and are not logged or
 * counted by) the rest of the ruleset. It is after conntrack (-200): every blocked packet has been
 * looked up (and a new one entered) in the connection table first.
 */
export const NFT_PRIORITY = -5;

/**
 * Priority of the agent's base chains in the prerouting stage (drop_hook `prerouting`, the
 * default with DROP): raw (-300), before connection tracking (-200), DNAT (-100) and every
 * filter: a packet from a listed address is dropped before the kernel spends a conntrack lookup
 * or entry on it (see docs/performance.md for what that is worth under a flood).
 */
export const NFT_RAW_PRIORITY = -300;

export type NftHook = 'prerouting' | 'input' | 'forward' | 'output';

/** Where the agent drops (config drop_hook): before connection tracking, or in the filter stage. */
export type DropStage = 'prerouting' | 'filter';

/** nft hooks for the configured iptables-style hook chains (DOCKER-USER traffic is forwarded traffic). */
export function nftHooks(hookChains: readonly string[]): NftHook[] {
  const hooks = new Set<NftHook>();
  for (const h of hookChains) {
    if (h === 'INPUT') hooks.add('input');
    else if (h === 'FORWARD' || h === 'DOCKER-USER') hooks.add('forward');
    else if (h === 'OUTPUT') hooks.add('output');
  }
  if (hooks.size === 0) hooks.add('input');
  return (['input', 'forward', 'output'] as const).filter((h) => hooks.has(h));
}

export interface NftLayout {
  readonly table: string;
  /** The set of single addresses: a plain hash set (see NFT_SET_SHAPES). */
  readonly set: string;
  /** The set of networks (an interval set), beside it. */
  readonly nets: string;
  /** The one-element set that counts every packet the agent blocks (see NFT_DROPS_DEF). */
  readonly drops: string;
  /** The agent instance whose marker the objects carry (see ownership.ts); none: the bare marker. */
  readonly instance?: string;
  readonly hooks: readonly NftHook[];
  /** The base chains' priority (NFT_RAW_PRIORITY or NFT_PRIORITY). */
  readonly priority: number;
  readonly stage: DropStage;
  /**
   * In the prerouting stage, which packets of the inbound side the configured hook chains ask
   * for: to the host itself (INPUT), forwarded (FORWARD, DOCKER-USER), or both.
   */
  readonly inbound: 'all' | 'local' | 'forwarded';
  /** In the prerouting stage, whether forwarded packets to a listed address are blocked (FORWARD, DOCKER-USER). */
  readonly forwardedOut: boolean;
  readonly action: 'DROP' | 'REJECT';
  readonly logBlocked: boolean;
  readonly direction: Direction;
}

/** The stage a plugin's options ask for: drop_hook, else before connection tracking (REJECT: the filter stage, the only one it may answer from). */
export function dropStage(o: Pick<PluginOptions, 'dropHook' | 'action'>): DropStage {
  return o.dropHook ?? (o.action === 'REJECT' ? 'filter' : 'prerouting');
}

/**
 * The layout a plugin's options ask for; the hooks follow the direction (see directionHooks). In
 * the prerouting stage one chain on `prerouting` sees what INPUT and FORWARD see (before the
 * routing decision: a `fib` match tells local from forwarded where only one of the two is
 * configured), and one on `output` what OUTPUT sees.
 */
export function nftLayout(o: PluginOptions): NftLayout {
  const direction = o.direction ?? 'both';
  const chains = directionHooks(o.hookChains, direction);
  const stage = dropStage(o);
  const local = chains.includes('INPUT');
  const forwarded = chains.includes('FORWARD') || chains.includes('DOCKER-USER');
  const inSide = direction !== 'outbound' && (local || forwarded);
  const hooks: NftHook[] =
    stage === 'filter' ? nftHooks(chains) : [...(inSide || (direction !== 'inbound' && forwarded) ? ['prerouting' as const] : []), ...(chains.includes('OUTPUT') ? ['output' as const] : [])];
  return {
    table: o.names.tableName,
    set: o.names.setName,
    nets: netsSetName(o.names.setName),
    drops: dropsSetName(o.names.setName),
    ...(o.instance ? { instance: o.instance } : {}),
    hooks,
    priority: stage === 'filter' ? NFT_PRIORITY : NFT_RAW_PRIORITY,
    stage,
    inbound: local && forwarded ? 'all' : local ? 'local' : 'forwarded',
    forwardedOut: forwarded,
    action: o.action,
    logBlocked: o.logBlocked,
    direction,
  };
}

/** The set that holds the networks (prefix shorter than /32), named after the set of addresses. */
export function netsSetName(set: string): string {
  return `${set}-nets`;
}

/**
 * Two sets, by shape. A plain hash set for single addresses (most of any feed): an add or
 * delete costs nft what the change costs, whatever the set's size. Networks need an interval
 * set, and nft 1.0.x reads every plain interval set on the host back into its own memory
 * before it evaluates any `add element` or `delete element`, of any set (to merge overlaps in
 * userspace): beside 150,000 networks every such command, the agent's, its checks' and every
 * other tool's, cost 4-5 s and 200 MB. A *concatenated* interval set is exempt (nft leaves its
 * intervals to the kernel), so the networks' set is keyed on the address and the packet's
 * family (`ip saddr . meta nfproto`, always `ipv4` here): the same match, and commands cost
 * what they change again (a 20,000-element check 0.17 s and 12 MB beside 150,000 networks).
 * A packet is looked up in both sets. The figures are in docs/nftables-at-scale.md.
 */
export interface NftParts {
  /** /32 entries, for the hash set. */
  readonly hosts: EntryColumns;
  /** Networks, for the interval set (must not overlap each other). */
  readonly nets: EntryColumns;
}

/** Entries split by shape (order kept within each part). */
export function splitByShape(entries: EntryColumns): NftParts {
  let n32 = 0;
  for (let i = 0; i < entries.length; i++) if (entries.prefixes[i] === 32) n32++;
  const hosts = new EntryColumns(n32);
  const nets = new EntryColumns(entries.length - n32);
  for (let i = 0; i < entries.length; i++) (entries.prefixes[i] === 32 ? hosts : nets).push(entries.starts[i]!, entries.prefixes[i]!, entries.timeoutAt(i));
  return { hosts, nets };
}

/** The set counting the packets the agent blocks, named after the set of addresses. */
export function dropsSetName(set: string): string {
  return `${set}-drops`;
}

/** The regular chain REJECT rules jump to: a TCP reset for TCP, ICMP admin-prohibited for the rest. */
export const NFT_REFUSE_CHAIN = 'refuse';

/** The packet field a side matches: the source of what comes in, the destination of what goes out. */
export function sideField(side: Side): 'saddr' | 'daddr' {
  return side === 'in' ? 'saddr' : 'daddr';
}

/**
 * The sides a base chain on `hook` matches: input sees only inbound packets, output only outbound,
 * forward both; prerouting the inbound side and, for forwarded packets, the outbound one (a listed
 * address is never the host's own, so a packet to one is forwarded).
 */
export function hookSides(l: NftLayout, hook: NftHook): Side[] {
  if (hook === 'prerouting') return sides(l.direction).filter((s) => s === 'in' || l.forwardedOut);
  return sides(l.direction).filter((s) => hook === 'forward' || (hook === 'input' ? s === 'in' : s === 'out'));
}

/** In the prerouting stage, the match that keeps the inbound side to what the hook chains ask for (none: all of it). */
export function inboundScope(l: NftLayout, hook: NftHook, side: Side): string | undefined {
  if (hook !== 'prerouting' || side !== 'in' || l.inbound === 'all') return undefined;
  return l.inbound === 'local' ? 'fib daddr type local' : 'fib daddr type != local';
}

/** One side's rules in nft syntax: the optional rate-limited log, then the counted block that records the address hit. */
export function nftSideRules(l: NftLayout, side: Side, hook?: NftHook): string[] {
  const f = sideField(side);
  const rules: string[] = [];
  const scope = hook ? inboundScope(l, hook, side) : undefined;
  for (const set of [l.set, l.nets]) {
    // Inbound leaves loopback alone: the TCP reset answering a blocked outbound
    // connect carries the listed address as its source and reaches the local
    // socket over loopback; dropped there, the client would wait for its timeout.
    const key = set === l.nets ? `ip ${f} . meta nfproto` : `ip ${f}`;
    const match = `${key} @${set}${side === 'in' ? ' iif != "lo"' : ''}${scope ? ` ${scope}` : ''}`;
    // Separate rules: a `limit` inside the drop rule would rate-limit the drop too.
    if (l.logBlocked) rules.push(`${match} limit rate ${LOG_LIMIT_PER_MINUTE}/minute log prefix "${LOG_PREFIX}"`);
    const verdict = l.action === 'REJECT' ? `jump ${NFT_REFUSE_CHAIN}` : 'drop';
    // The drops update after the hits update: an `update` into a full hits set ends its rule
    // without a verdict, and the same block without it (next rule) then counts and blocks it.
    rules.push(`${match} update @${hitsSetName(l.set, side)} { ip ${f} } update @${l.drops} { meta nfproto } counter ${verdict}`);
    rules.push(`${match} update @${l.drops} { meta nfproto } counter ${verdict}`);
  }
  return rules;
}

/** Rules of the base chain on `hook`, in nft syntax. */
export function nftChainRules(l: NftLayout, hook: NftHook): string[] {
  return hookSides(l, hook).flatMap((side) => nftSideRules(l, side, hook));
}

/** The second field of every element of the networks' set (see NftParts). */
export const NETS_KEY_TAIL = ' . ipv4';

/**
 * `{ a, b timeout 5s, ... }` elements, one per line (nft error messages quote the failing line), each line after
 * the first preceded by `,\n`; `tail`: what follows each address in a concatenated set's key.
 */
export function writeNftElements(t: TextBuilder, indent: string, entries: EntryColumns, tail = '', timeouts = true): void {
  const { starts, prefixes } = entries;
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) t.str(',\n');
    t.str(indent).cidr(starts[i]!, prefixes[i]!).str(tail);
    if (!timeouts) continue;
    const timeout = entries.timeouts[i]!;
    if (!Number.isNaN(timeout)) t.str(' timeout ').num(timeout).byte(115); // `s`
  }
}

/** What follows each address of `set`'s elements (the networks' family field, see NftParts). */
export function keyTail(l: NftLayout, set: string): string {
  return set === l.nets ? NETS_KEY_TAIL : '';
}

/** One of the agent's sets as declared in its table block, with `elements` (none: the declaration alone). */
function writeSetDeclaration(t: TextBuilder, l: NftLayout, def: NftSetDef, elements?: EntryColumns): void {
  t.str(`\tset ${def.name} {\n`);
  for (const statement of def.body) t.str(`\t\t${statement}\n`);
  t.str(`\t\tcomment "${ownerMark(l.instance)}"\n`);
  if (elements && elements.length > 0) {
    t.str('\t\telements = {\n');
    writeNftElements(t, '\t\t\t', elements, keyTail(l, def.name));
    t.str('\n\t\t}\n');
  }
  t.str('\t}\n');
}

/**
 * Elements added as a table block (`table inet T { set S { ...; elements = { ... } } }`),
 * the set declared exactly as the agent creates it, instead of `add element`. Both add in
 * the same transaction, but for any `add element` or `delete element` nft 1.0.x first reads
 * back every interval set of every table on the host (to merge overlaps in userspace): with
 * 150,000 networks in the agent's interval set that read cost each run 3.4 s and 200 MB.
 * The block form reads nothing. The table's marker is repeated so that a table removed
 * meanwhile comes back as the agent's (its chains are then put back by the next check).
 */
function writeElementsBlock(t: TextBuilder, l: NftLayout, set: string, elements: EntryColumns): void {
  t.str(`table inet ${l.table} {\n\tcomment "${ownerMark(l.instance)}"\n`);
  writeSetDeclaration(t, l, setDefs(l).find((d) => d.name === set)!, elements);
  t.str('}\n');
}

/**
 * The table block's head and its sets (`table inet T { comment ...; set ... }`, not closed), the
 * two address sets holding `hosts` and `nets`. The ownership marker (see ownership.ts) is on the
 * table for people, and on the sets for the agent (a hits set is read on its own cheaply, the
 * table not: see probe.ts).
 */
export function writeTableSets(t: TextBuilder, l: NftLayout, hosts: EntryColumns, nets: EntryColumns): void {
  t.str(`table inet ${l.table} {\n\tcomment "${ownerMark(l.instance)}"\n`);
  for (const def of setDefs(l)) writeSetDeclaration(t, l, def, def.name === l.set ? hosts : def.name === l.nets ? nets : undefined);
}


/** Full refill of one set of an intact table: `flush set` + `add element` in one transaction (atomic, keeps the chains' counters). */
export function renderNftRefill(l: NftLayout, entries: EntryColumns, set = l.set): string {
  return nftRefillScript(l, entries, set).toString();
}

/** What renderNftRefill renders, as bytes for nft's stdin. */
export function nftRefillScript(l: NftLayout, entries: EntryColumns, set = l.set): Buffer {
  const t = new TextBuilder(entries.length * ENTRY_LINE_MAX + 4096);
  t.str(`flush set inet ${l.table} ${set}\n`);
  if (entries.length > 0) writeElementsBlock(t, l, set, entries);
  return t.toBuffer();
}

/**
 * Delta transaction. Each element to delete is first "added" (a no-op when
 * present): an element whose timeout ran out between our read and this
 * transaction would otherwise make `delete element` fail the whole
 * transaction. Updated elements are deleted and re-added with the new timeout
 * (older kernels do not update the timeout of an existing element on `add`).
 */
export function renderNftDelta(l: NftLayout, add: EntryColumns, del: EntryColumns, set = l.set): string {
  return nftDeltaScript(l, add, del, set).toString();
}

/** What renderNftDelta renders, as bytes for nft's stdin (`set`: which of the two sets). */
export function nftDeltaScript(l: NftLayout, add: EntryColumns, del: EntryColumns, set = l.set): Buffer {
  const t = new TextBuilder((add.length + 2 * del.length) * ENTRY_LINE_MAX + 4096);
  if (del.length > 0) {
    // The guard: the elements to delete added without a timeout (a no-op where present), then deleted.
    const guard = new EntryColumns(del.length);
    for (let i = 0; i < del.length; i++) guard.push(del.starts[i]!, del.prefixes[i]!, undefined);
    writeElementsBlock(t, l, set, guard);
    t.str(`delete element inet ${l.table} ${set} {\n`);
    writeNftElements(t, '\t', del, keyTail(l, set), false);
    t.str('\n}\n');
  }
  if (add.length > 0) writeElementsBlock(t, l, set, add);
  return t.toBuffer();
}

export { parseNftHits, parseNftScriptElements, parseNftSetJson, type NftSetParsed } from './parse.js';

export { HITS_TIMEOUT_S, HOSTS_FLAGS, NETS_FLAGS, NETS_TYPEOF, NFT_HITS_SIZE } from './table/sets.js';
