import { toCidr } from '../net/ipv4.js';
import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from './log-prefix.js';
import { parseNftJson, type NftItem } from './nft/json.js';

/**
 * The objects as version 0.1 of the agent wrote them, before ownership markers and
 * before `direction` and the hit counters: frozen here so an upgrade can recognise
 * them exactly and adopt them once (see ownership.ts). Nothing else may match: an
 * object that is not exactly one of these stays someone else's.
 */

const V01_LOG = `-m limit --limit ${LOG_LIMIT_PER_MINUTE}/min -j LOG --log-prefix "${LOG_PREFIX}"`;
const v01Target = (action: 'DROP' | 'REJECT') => (action === 'REJECT' ? '-j REJECT --reject-with icmp-port-unreachable' : '-j DROP');

/** The ipset backend's chain in 0.1: one set-match rule (two with logging), source only. */
export function isV01SetChain(rules: readonly string[], chain: string, setName: string, action: 'DROP' | 'REJECT', logBlocked: boolean): boolean {
  const match = `-A ${chain} -m set --match-set ${setName} src`;
  const want = [...(logBlocked ? [`${match} ${V01_LOG}`] : []), `${match} ${v01Target(action)}`];
  return rules.length === want.length && rules.every((r, i) => r === want[i]);
}

/** The iptables backend's chain in 0.1: `-A CHAIN -s CIDR -j TARGET` per entry (a LOG rule before each with logging). */
export function isV01EntryChain(rules: readonly string[], chain: string, action: 'DROP' | 'REJECT', logBlocked: boolean): boolean {
  const head = `-A ${chain} -s `;
  let pendingLog: string | undefined;
  for (const line of rules) {
    if (!line.startsWith(head)) return false;
    const rest = line.slice(head.length);
    const space = rest.indexOf(' ');
    const cidr = space === -1 ? undefined : toCidr(rest.slice(0, space));
    const spec = space === -1 ? '' : rest.slice(space + 1);
    if (!cidr) return false;
    if (logBlocked && spec === V01_LOG && pendingLog === undefined) pendingLog = cidr.text;
    else if (spec === v01Target(action) && (!logBlocked || pendingLog === cidr.text)) pendingLog = undefined;
    else return false;
  }
  return pendingLog === undefined;
}

/**
 * The nft table in 0.1 (`nft -j -t list table`): the interval set with timeouts, and one base
 * chain per hook at priority -5 whose rules only match `ip saddr @set` and then drop or reject
 * (with an optional rate-limited log rule first). No comment, no other set, no other chain.
 */
export function isV01NftTable(json: string, table: string, set: string, hooks: readonly string[]): boolean {
  let items: NftItem[];
  try {
    items = parseNftJson(json);
  } catch {
    return false;
  }
  const chains = new Set<string>();
  let setSeen = false;
  for (const item of items) {
    if ('table' in item || 'metainfo' in item) continue;
    if ('set' in item) {
      const s = item.set as NftItem;
      if (s.table !== table || s.name !== set || s.type !== 'ipv4_addr' || s.comment !== undefined) return false;
      setSeen = true;
    } else if ('chain' in item) {
      const c = item.chain as NftItem;
      if (c.table !== table || !hooks.includes(String(c.name)) || c.hook !== c.name || c.prio !== -5 || c.policy !== 'accept') return false;
      chains.add(String(c.name));
    } else if ('rule' in item) {
      const r = item.rule as NftItem;
      const expr = (r.expr ?? []) as NftItem[];
      const first = expr[0]?.match as NftItem | undefined;
      const left = first?.left as NftItem | undefined;
      const payload = left?.payload as NftItem | undefined;
      if (r.table !== table || payload?.field !== 'saddr' || first?.right !== `@${set}`) return false;
      const rest = expr.slice(1).map((e) => Object.keys(e)[0]);
      const ok = ['counter,drop', 'counter,reject', 'limit,log'].includes(rest.join(','));
      if (!ok) return false;
    } else return false;
  }
  return setSeen && chains.size === hooks.length;
}
