import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from '../log-prefix.js';
import type { KernelEntry } from '../entries.js';
import type { DropCounters, HitCounter } from '../plugin.js';
import { toCidr } from '../../net/ipv4.js';
import { hitsSetName, sides, type Direction, type Side } from '../direction.js';

/** The option naming a side's address: the source of what comes in, the destination of what goes out. */
function addressOption(side: Side): '-s' | '-d' {
  return side === 'in' ? '-s' : '-d';
}

/** `--match-set` direction flag for a side. */
function setFlag(side: Side): 'src' | 'dst' {
  return side === 'in' ? 'src' : 'dst';
}

/**
 * Inbound rules leave loopback alone: the TCP reset REJECT answers a blocked
 * outbound connect with carries the listed address as its source and reaches
 * the local socket over loopback (OUTPUT, then INPUT); dropped there, the
 * client would wait for its timeout after all. Nothing else on loopback
 * carries a listed address (the host's own addresses are never listed).
 */
const NOT_LOOPBACK = '! -i lo ! -o lo';

/** The start of a side's rules: chain, the address option (per-entry rules), and the loopback exemption inbound. */
function ruleHead(chain: string, side: Side, address?: string): string {
  const addr = address === undefined ? '' : ` ${addressOption(side)} ${address}`;
  return `-A ${chain}${addr}${side === 'in' ? ` ${NOT_LOOPBACK}` : ''}`;
}

export const IPT_LOG = `-m limit --limit ${LOG_LIMIT_PER_MINUTE}/min -j LOG --log-prefix "${LOG_PREFIX}"`;

/**
 * The blocking lines for one match, as `iptables -S` prints them back (so
 * read-back compares equal): DROP, or for REJECT a TCP reset for TCP and ICMP
 * admin-prohibited for the rest, so a local client fails at once instead of
 * waiting for its connect timeout. `head` is `-A CHAIN [-s/-d ADDR]`, `match`
 * the rest of the match (may be empty).
 */
function pushVerdicts(out: string[], head: string, match: string, action: 'DROP' | 'REJECT'): void {
  const m = match ? ` ${match}` : '';
  if (action === 'DROP') {
    out.push(`${head}${m} -j DROP`);
    return;
  }
  out.push(`${head} -p tcp${m} -j REJECT --reject-with tcp-reset`, `${head}${m} -j REJECT --reject-with icmp-admin-prohibited`);
}

/**
 * The agent chain's contents for the ipset plugin (iptables-restore `-A`
 * lines), per side: the optional log; a SET rule recording the address in
 * the side's hits set (with counters); the block counted in that set; and the
 * same block without it, for the rare packet whose address could not be
 * recorded (a full hits set): it is blocked all the same.
 */
export function iptablesSetRules(chain: string, setName: string, action: 'DROP' | 'REJECT', logBlocked: boolean, direction: Direction = 'both'): string[] {
  const rules: string[] = [];
  for (const side of sides(direction)) {
    const f = setFlag(side);
    const match = `-m set --match-set ${setName} ${f}`;
    const hits = hitsSetName(setName, side);
    const head = ruleHead(chain, side);
    if (logBlocked) rules.push(`${head} ${match} ${IPT_LOG}`);
    rules.push(`${head} ${match} -j SET --add-set ${hits} ${f} --exist`);
    pushVerdicts(rules, head, `${match} -m set --match-set ${hits} ${f}`, action);
    pushVerdicts(rules, head, match, action);
  }
  return rules;
}

/** `-s 192.0.2.7/32`: iptables prints the prefix even for a single address. */
function addressText(e: KernelEntry): string {
  return `${e.cidr.text.split('/')[0]}/${e.cidr.prefix}`;
}

/**
 * The agent chain's contents for the iptables fallback: per entry and side,
 * the optional log and the block. Each entry's own rules count its hits.
 */
export function pushIptablesEntryRules(
  out: string[],
  chain: string,
  entries: Iterable<KernelEntry>,
  action: 'DROP' | 'REJECT',
  logBlocked: boolean,
  direction: Direction = 'both',
): void {
  const list = sides(direction);
  for (const e of entries) {
    const addr = addressText(e);
    for (const side of list) {
      const head = ruleHead(chain, side, addr);
      if (logBlocked) out.push(`${head} ${IPT_LOG}`);
      pushVerdicts(out, head, '', action);
    }
  }
}

export interface ChainContents {
  /** Canonical CIDRs blocked by the chain's rules. */
  readonly entries: Map<string, undefined>;
  /** The rules are exactly what the agent would write for these entries. */
  readonly wellFormed: boolean;
}

const ENTRY_RULE = /^-A \S+ -[sd] (\S+)/;

/**
 * Read the agent chain's `-A CHAIN -s X ...` / `-d X` lines back: the entries
 * are the addresses named, in order; the chain is well formed when it is
 * exactly what pushIptablesEntryRules writes for them (anything else is
 * rebuilt).
 */
export function parseEntryChain(lines: readonly string[], chain: string, action: 'DROP' | 'REJECT', logBlocked: boolean, direction: Direction = 'both'): ChainContents {
  const entries = new Map<string, undefined>();
  const order: KernelEntry[] = [];
  let wellFormed = true;
  for (const line of lines) {
    const m = ENTRY_RULE.exec(line);
    const cidr = m && line.startsWith(`-A ${chain} `) ? toCidr(m[1]!) : undefined;
    if (!cidr) {
      wellFormed = false;
      continue;
    }
    if (!entries.has(cidr.text)) order.push({ cidr, timeout: undefined });
    entries.set(cidr.text, undefined);
  }
  const expected: string[] = [];
  pushIptablesEntryRules(expected, chain, order, action, logBlocked, direction);
  if (wellFormed) wellFormed = expected.length === lines.length && expected.every((l, i) => l === lines[i]);
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

/**
 * Per-entry hits of the iptables fallback from `iptables -S CHAIN -v`
 * (`-A C -d 192.0.2.7/32 -p tcp -c PKTS BYTES -j REJECT ...`): the blocking
 * rules of each entry and side, summed (LOG rules are not counted, their
 * packets reach the block next). Entries never hit are left out.
 */
export function parseEntryHits(text: string): HitCounter[] {
  const sums = new Map<string, { ip: string; side: Side; packets: number; bytes: number }>();
  for (const line of text.split('\n')) {
    const m = /^-A \S+ -([sd]) (\S+) .*?-c (\d+) (\d+) -j (?:DROP|REJECT)\b/.exec(line);
    const cidr = m ? toCidr(m[2]!) : undefined;
    if (!m || !cidr) continue;
    const side: Side = m[1] === 's' ? 'in' : 'out';
    const key = `${side} ${cidr.text}`;
    const sum = sums.get(key) ?? { ip: cidr.text, side, packets: 0, bytes: 0 };
    sum.packets += Number(m[3]);
    sum.bytes += Number(m[4]);
    sums.set(key, sum);
  }
  return [...sums.values()].filter((h) => h.packets > 0);
}
