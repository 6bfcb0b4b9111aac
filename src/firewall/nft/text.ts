import { rangeToCidrs } from '../../net/cidr-index.js';
import { toCidr, type Cidr } from '../../net/ipv4.js';
import type { KernelEntry } from '../entries.js';
import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from '../log-prefix.js';
import { OWNER_MARK } from '../ownership.js';
import { parseNftJson } from './json.js';

/** nft script text (pure): the agent's table, refill and delta transactions, and the set read back from `nft -j`. */


/**
 * Priority of the agent's base chains: just before `filter` (0), where
 * iptables-nft's own chains, firewalld and ufw sit. In nftables every base
 * chain on a hook sees the packet and a drop anywhere is final, so this is not
 * about winning over their accepts: dropping first means blocked packets cost
 * nothing in (and are not logged or counted by) the rest of the ruleset. It
 * stays after conntrack (-200) and mangle (-150), so nothing else changes for
 * other tables.
 */
export const NFT_PRIORITY = -5;

export type NftHook = 'input' | 'forward' | 'output';

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
  readonly set: string;
  readonly hooks: readonly NftHook[];
  readonly action: 'DROP' | 'REJECT';
  readonly logBlocked: boolean;
}

/** Rules of each base chain, in nft syntax. */
export function nftChainRules(l: NftLayout): string[] {
  const rules: string[] = [];
  // Separate rules: a `limit` inside the drop rule would rate-limit the drop too.
  if (l.logBlocked) rules.push(`ip saddr @${l.set} limit rate ${LOG_LIMIT_PER_MINUTE}/minute log prefix "${LOG_PREFIX}"`);
  rules.push(`ip saddr @${l.set} counter ${l.action === 'REJECT' ? 'reject' : 'drop'}`);
  return rules;
}

function nftElement(e: KernelEntry): string {
  return e.timeout === undefined ? e.cidr.text : `${e.cidr.text} timeout ${e.timeout}s`;
}

/** `{ a, b timeout 5s, ... }`, one element per line (nft error messages quote the failing line). */
function pushNftElements(out: string[], indent: string, entries: readonly KernelEntry[]): void {
  const last = entries.length - 1;
  for (let i = 0; i <= last; i++) out.push(`${indent}${nftElement(entries[i]!)}${i === last ? '' : ','}`);
}

/** The whole table as an nft block (`table inet T { ... }`), entries must not overlap. */
export function pushNftTable(out: string[], l: NftLayout, entries: readonly KernelEntry[]): void {
  // The ownership marker (see ownership.ts): on the table for people, on the set for the agent.
  out.push(`table inet ${l.table} {`, `\tcomment "${OWNER_MARK}"`);
  out.push(`\tset ${l.set} {`, '\t\ttype ipv4_addr', '\t\tflags interval,timeout', `\t\tcomment "${OWNER_MARK}"`);
  if (entries.length > 0) {
    out.push('\t\telements = {');
    pushNftElements(out, '\t\t\t', entries);
    out.push('\t\t}');
  }
  out.push('\t}');
  const rules = nftChainRules(l);
  for (const hook of l.hooks) {
    out.push(`\tchain ${hook} {`, `\t\ttype filter hook ${hook} priority ${NFT_PRIORITY}; policy accept;`);
    for (const r of rules) out.push(`\t\t${r}`);
    out.push('\t}');
  }
  out.push('}');
}

/**
 * Transaction that replaces the table wholesale: `add table` + `delete table`
 * (so the delete cannot fail on a missing table) + the new table, in one
 * `nft -f` run. nft commits a file as one transaction, so packets see either
 * the old table or the new one, never an empty set.
 */
export function renderNftRecreate(l: NftLayout, entries: readonly KernelEntry[]): string {
  const out = [`add table inet ${l.table}`, `delete table inet ${l.table}`];
  pushNftTable(out, l, entries);
  out.push('');
  return out.join('\n');
}

/** Full refill of an intact table: `flush set` + `add element` in one transaction (atomic, keeps the chains' counters). */
export function renderNftRefill(l: NftLayout, entries: readonly KernelEntry[]): string {
  const out = [`flush set inet ${l.table} ${l.set}`];
  if (entries.length > 0) {
    out.push(`add element inet ${l.table} ${l.set} {`);
    pushNftElements(out, '\t', entries);
    out.push('}');
  }
  out.push('');
  return out.join('\n');
}

/**
 * Delta transaction. Each element to delete is first "added" (a no-op when
 * present): an element whose timeout ran out between our read and this
 * transaction would otherwise make `delete element` fail the whole
 * transaction. Updated elements are deleted and re-added with the new timeout
 * (older kernels do not update the timeout of an existing element on `add`).
 */
export function renderNftDelta(l: NftLayout, add: readonly KernelEntry[], del: readonly string[]): string {
  const out: string[] = [];
  const target = `inet ${l.table} ${l.set}`;
  if (del.length > 0) {
    const list = del.join(',\n\t');
    out.push(`add element ${target} {\n\t${list}\n}`, `delete element ${target} {\n\t${list}\n}`);
  }
  if (add.length > 0) {
    out.push(`add element ${target} {`);
    pushNftElements(out, '\t', add);
    out.push('}');
  }
  out.push('');
  return out.join('\n');
}

export interface NftSetParsed {
  /** Canonical CIDR -> remaining seconds (undefined = permanent). Ranges are split into CIDRs. */
  readonly entries: Map<string, number | undefined>;
  /** Elements that are not one CIDR (ranges from auto-merge, other families): the set needs a full rebuild. */
  readonly nonCidr: number;
}

function ipToNumber(ip: string): number | undefined {
  const c = toCidr(ip);
  return c && c.prefix === 32 ? c.start : undefined;
}

/**
 * Parse `nft -j list set` output. Elements come as plain strings, `{prefix:
 * {addr, len}}`, `{range: [a, b]}` (auto-merged intervals), or any of these
 * wrapped in `{elem: {val, timeout, expires}}`.
 */
export function parseNftSetJson(json: string): NftSetParsed {
  const entries = new Map<string, number | undefined>();
  let nonCidr = 0;
  const items = parseNftJson(json);
  for (const item of items) {
    const set = (item as { set?: { elem?: unknown } }).set;
    if (!set || !Array.isArray(set.elem)) continue;
    for (const raw of set.elem) {
      let val: unknown = raw;
      let remaining: number | undefined;
      if (raw && typeof raw === 'object' && 'elem' in raw) {
        const el = (raw as { elem: { val?: unknown; timeout?: unknown; expires?: unknown } }).elem;
        val = el.val;
        const t = typeof el.expires === 'number' ? el.expires : typeof el.timeout === 'number' ? el.timeout : undefined;
        // A timed element in its last second reports `expires 0`; it is still there.
        remaining = t === undefined ? undefined : Math.max(t, 1);
      }
      const cidrs: Cidr[] = [];
      if (typeof val === 'string') {
        const c = toCidr(val);
        if (c) cidrs.push(c);
      } else if (val && typeof val === 'object' && 'prefix' in val) {
        const p = (val as { prefix: { addr?: unknown; len?: unknown } }).prefix;
        const c = typeof p.addr === 'string' && typeof p.len === 'number' ? toCidr(p.len === 32 ? p.addr : `${p.addr}/${p.len}`) : undefined;
        if (c) cidrs.push(c);
      } else if (val && typeof val === 'object' && 'range' in val) {
        const r = (val as { range: unknown }).range;
        const a = Array.isArray(r) && typeof r[0] === 'string' ? ipToNumber(r[0]) : undefined;
        const b = Array.isArray(r) && typeof r[1] === 'string' ? ipToNumber(r[1]) : undefined;
        if (a !== undefined && b !== undefined && a <= b) {
          const parts = rangeToCidrs(a, b);
          cidrs.push(...parts);
          if (parts.length !== 1) nonCidr++;
        }
      }
      if (cidrs.length === 0) {
        nonCidr++;
        continue;
      }
      for (const c of cidrs) entries.set(c.text, remaining);
    }
  }
  return { entries, nonCidr };
}


/**
 * Elements of an nft script rendered by pushNftTable (one element per line
 * inside `elements = { ... }`): CIDR -> timeout seconds (undefined = none).
 */
export function parseNftScriptElements(text: string): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  let inside = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!inside) {
      if (line === 'elements = {') inside = true;
      continue;
    }
    if (line === '}') break;
    const m = /^([^\s,]+)(?: timeout (\d+)s)?,?$/.exec(line);
    const cidr = m ? toCidr(m[1]!) : undefined;
    if (cidr) out.set(cidr.text, m![2] === undefined ? undefined : Number(m![2]));
  }
  return out;
}
