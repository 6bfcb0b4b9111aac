import type { Netns } from '../netns/netns.js';

/** The three kernel backends, as named in config `plugin`. */
export type KernelPlugin = 'nftables' | 'ipset' | 'iptables';

export interface OwnedNames {
  set: string;
  chain: string;
  table: string;
}
export const DEFAULT_NAMES: OwnedNames = { set: 'wcf-blocklist', chain: 'WCF-AGENT', table: 'wcf_agent' };

/** `1.2.3.4/32` -> `1.2.3.4`: the form the agent prints and reports. */
const canonical = (cidr: string): string => (cidr.endsWith('/32') ? cidr.slice(0, -3) : cidr);

/** What the tools say when the object read is not there. */
const ABSENT = /does not exist|No such file or directory/;

/**
 * A read that may find nothing: the object's absence (the tool's own words) is an answer,
 * `undefined`; any other failure (a tool that cannot run) fails the test.
 */
async function readOrEmpty(ns: Netns, file: string, args: string[]): Promise<string | undefined> {
  try {
    return await ns.exec(file, args);
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? '');
    if (/^exec of /m.test(stderr) || !ABSENT.test(stderr)) throw err;
    return undefined;
  }
}

/**
 * What the kernel blocks through the agent's own objects inside `ns`, read with the
 * distribution's tools (not the agent's code): nftables set elements, ipset members,
 * or the source addresses of the iptables chain's rules. Sorted; empty when the
 * objects are absent.
 */
export async function kernelEntries(ns: Netns, plugin: KernelPlugin, names: OwnedNames = DEFAULT_NAMES): Promise<string[]> {
  if (plugin === 'ipset') {
    const out = await readOrEmpty(ns, 'ipset', ['save', names.set]);
    // The ownership marker (`255.255.255.255 ... nomatch comment "wcf-agent"`) blocks nothing: not an entry.
    return (out ?? '').split('\n').filter((l) => l.startsWith('add ') && !l.includes(' nomatch')).map((l) => canonical(l.split(' ')[2]!)).sort();
  }
  if (plugin === 'iptables') {
    // All rules, filtered: `iptables -S CHAIN` on a missing chain fails with varying words.
    const out = await ns.exec('iptables', ['-S']);
    return out
      .split('\n')
      .filter((l) => l.startsWith(`-A ${names.chain} -s `) && !l.includes(' -j LOG'))
      .map((l) => canonical(l.split(' ')[3]!))
      .sort();
  }
  // Two sets: single addresses (hash) and networks (`<set>-nets`, keyed on the address and the family: `{concat: [net, "ipv4"]}`).
  const text = (e: unknown): string => {
    let v = (e as { elem?: { val: unknown } }).elem?.val ?? e;
    const concat = (v as { concat?: unknown[] } | null)?.concat;
    if (Array.isArray(concat) && concat[1] === 'ipv4') v = concat[0];
    if (typeof v === 'string') return v;
    const p = (v as { prefix?: { addr: string; len: number } }).prefix;
    if (p) return p.len === 32 ? p.addr : `${p.addr}/${p.len}`;
    return JSON.stringify(v);
  };
  const all: string[] = [];
  for (const set of [names.set, `${names.set}-nets`]) {
    const out = await readOrEmpty(ns, 'nft', ['-j', 'list', 'set', 'inet', names.table, set]);
    if (out === undefined) continue;
    const json = JSON.parse(out) as { nftables: { set?: { elem?: unknown[] } }[] };
    all.push(...(json.nftables.find((o) => o.set)?.set?.elem ?? []).map(text));
  }
  return all.sort();
}

/** Does any object named like the agent's own exist in `ns` (set, chain, table, hook)? */
export async function agentObjectsPresent(ns: Netns, names: OwnedNames = DEFAULT_NAMES): Promise<string[]> {
  const found: string[] = [];
  const sets = await ns.exec('ipset', ['list', '-n']);
  if (sets.split('\n').includes(names.set)) found.push(`ipset ${names.set}`);
  const rules = await ns.exec('iptables', ['-S']);
  if (rules.split('\n').some((l) => l.split(' ').includes(names.chain))) found.push(`iptables chain ${names.chain}`);
  const tables = await ns.exec('nft', ['list', 'tables']);
  if (tables.split('\n').some((l) => l.trim() === `table inet ${names.table}`)) found.push(`nft table inet ${names.table}`);
  return found;
}

/**
 * Remove every netfilter object in `ns`, as a reboot or another tool's
 * `nft flush ruleset` / `iptables -F; iptables -X` / `ipset destroy` would.
 */
export async function wipeKernel(ns: Netns): Promise<void> {
  await ns.exec('iptables', ['-F']);
  await ns.exec('iptables', ['-X']);
  await ns.exec('ipset', ['destroy']);
  await ns.exec('nft', ['flush', 'ruleset']);
}

/**
 * Objects someone else owns, of every kind the backends use: the agent must leave
 * them byte-for-byte alone (and they make "the ruleset as it was found" non-empty).
 */
export async function seedForeign(ns: Netns): Promise<void> {
  await ns.exec('iptables', ['-N', 'SOMEONE-ELSE']);
  await ns.exec('iptables', ['-A', 'INPUT', '-s', '203.0.113.9', '-j', 'SOMEONE-ELSE']);
  await ns.exec('ipset', ['create', 'someone-else', 'hash:ip']);
  await ns.exec('nft', ['add', 'table', 'inet', 'someone_else']);
}

/**
 * `read()` until two results in a row have the same `size`: a listing made while the kernel
 * still grows a big set's hash table (just after a write of 100,000 elements) can miss some (seen:
 * 148,615 of 151,000, then all of them on the next read, the "missing" ones present to
 * `nft -c delete element`; docs/nftables-at-scale.md, Left open). Five reads at most.
 */
export async function untilTwoAgree<T>(read: () => Promise<T>, size: (t: T) => number): Promise<T> {
  let last = await read();
  for (let i = 0; i < 4; i++) {
    const next = await read();
    if (size(next) === size(last)) return next;
    last = next;
  }
  return last;
}

