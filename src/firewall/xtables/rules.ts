import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from '../log-prefix.js';
import type { KernelEntry } from '../entries.js';
import type { DropCounters } from '../plugin.js';
import { toCidr } from '../../net/ipv4.js';

/** Target as `iptables -S` prints it back (explicit reject type), so read-back compares equal. */
export function iptablesTarget(action: 'DROP' | 'REJECT'): string {
  return action === 'REJECT' ? '-j REJECT --reject-with icmp-port-unreachable' : '-j DROP';
}

export const IPT_LOG = `-m limit --limit ${LOG_LIMIT_PER_MINUTE}/min -j LOG --log-prefix "${LOG_PREFIX}"`;

/** The agent chain's contents for the ipset plugin (iptables-restore `-A` lines). */
export function iptablesSetRules(chain: string, setName: string, action: 'DROP' | 'REJECT', logBlocked: boolean): string[] {
  const match = `-A ${chain} -m set --match-set ${setName} src`;
  const rules: string[] = [];
  if (logBlocked) rules.push(`${match} ${IPT_LOG}`);
  rules.push(`${match} ${iptablesTarget(action)}`);
  return rules;
}

/** The agent chain's contents for the iptables fallback: one rule (two with logging) per entry. */
export function pushIptablesEntryRules(
  out: string[],
  chain: string,
  entries: Iterable<KernelEntry>,
  action: 'DROP' | 'REJECT',
  logBlocked: boolean,
): void {
  const target = iptablesTarget(action);
  for (const e of entries) {
    const match = `-A ${chain} -s ${e.cidr.text}`;
    if (logBlocked) out.push(`${match} ${IPT_LOG}`);
    out.push(`${match} ${target}`);
  }
}

export interface ChainContents {
  /** Canonical CIDRs blocked by the chain's rules. */
  readonly entries: Map<string, undefined>;
  /** The rules are exactly what the agent would write for these entries. */
  readonly wellFormed: boolean;
}

/**
 * Read the agent chain's `-A CHAIN -s X ...` lines back. iptables prints
 * `-s 192.0.2.7/32` for an address and may reorder nothing else; any rule the
 * agent would not have written makes the chain "not well formed" (rebuilt).
 */
export function parseEntryChain(lines: readonly string[], chain: string, action: 'DROP' | 'REJECT', logBlocked: boolean): ChainContents {
  const entries = new Map<string, undefined>();
  const target = iptablesTarget(action);
  const otherTarget = iptablesTarget(action === 'REJECT' ? 'DROP' : 'REJECT');
  const head = `-A ${chain} -s `;
  let wellFormed = true;
  let pendingLog: string | undefined;
  for (const line of lines) {
    if (!line.startsWith(head)) {
      wellFormed = false;
      continue;
    }
    const rest = line.slice(head.length);
    const space = rest.indexOf(' ');
    const cidr = toCidr(space === -1 ? rest : rest.slice(0, space));
    const spec = space === -1 ? '' : rest.slice(space + 1);
    if (!cidr) {
      wellFormed = false;
      continue;
    }
    if (logBlocked && spec === IPT_LOG) {
      if (pendingLog !== undefined) wellFormed = false;
      pendingLog = cidr.text;
    } else if (spec === target || spec === otherTarget) {
      if (spec !== target) wellFormed = false;
      if (logBlocked && pendingLog !== cidr.text) wellFormed = false;
      pendingLog = undefined;
      if (entries.has(cidr.text)) wellFormed = false;
      entries.set(cidr.text, undefined);
    } else {
      wellFormed = false;
    }
  }
  if (pendingLog !== undefined) wellFormed = false;
  return { entries, wellFormed };
}

/**
 * Sum of the DROP/REJECT rules of `iptables -L CHAIN -v -x -n` (the ipset
 * plugin's set-match rule, or the iptables plugin's per-entry rules; LOG rules
 * are not counted, their packets reach the drop rule next).
 */
export function parseIptablesCounters(text: string): DropCounters {
  const out = { packets: 0, bytes: 0 };
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 3 || !/^\d+$/.test(f[0]!) || !/^\d+$/.test(f[1]!)) continue;
    if (f[2] !== 'DROP' && f[2] !== 'REJECT') continue;
    out.packets += Number(f[0]);
    out.bytes += Number(f[1]);
  }
  return out;
}
