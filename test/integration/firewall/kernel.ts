import type { Netns } from '../../netns/netns.js';
import { untilTwoAgree } from '../../helpers/kernel.js';
import { NAMES } from './common.js';

/** Reads of the kernel made without the plugins, so the tests check them against an independent view. */

/** `nft -j list set` of the addresses' set and of the networks' set: CIDR -> {timeout, expires} ({} = permanent). */
export function nftElements(ns: Netns): Promise<Map<string, { timeout?: number; expires?: number }>> {
  return untilTwoAgree(() => listElements(ns), (m) => m.size);
}

async function listElements(ns: Netns): Promise<Map<string, { timeout?: number; expires?: number }>> {
  const items: Array<{ set?: { elem?: unknown[] } }> = [];
  for (const set of [NAMES.setName, `${NAMES.setName}-nets`]) {
    const doc = JSON.parse(await ns.exec('nft', ['-j', 'list', 'set', 'inet', NAMES.tableName, set])) as { nftables: Array<{ set?: { elem?: unknown[] } }> };
    items.push(...doc.nftables);
  }
  const out = new Map<string, { timeout?: number; expires?: number }>();
  for (const item of items) {
    for (const raw of item.set?.elem ?? []) {
      const el = (raw as { elem?: { val: unknown; timeout?: number; expires?: number } }).elem;
      let val = el ? el.val : raw;
      // The networks' set is keyed on the address and the family: `{concat: [net, "ipv4"]}`.
      const concat = (val as { concat?: unknown[] } | null)?.concat;
      if (Array.isArray(concat) && concat[1] === 'ipv4') val = concat[0];
      const text =
        typeof val === 'string' ? val : `${(val as { prefix: { addr: string; len: number } }).prefix.addr}/${(val as { prefix: { len: number } }).prefix.len}`;
      out.set(text, el ? { timeout: el.timeout, expires: el.expires } : {});
    }
  }
  return out;
}

/** `ipset save` of the agent's set: CIDR -> timeout (0 = permanent). */
export async function ipsetEntries(ns: Netns): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await ns.exec('ipset', ['list', NAMES.setName, '-output', 'save'])).split('\n')) {
    const m = /^add \S+ (\S+)(?: timeout (\d+))?$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2] ?? 0));
  }
  return out;
}

/** The agent's hook rule as `iptables -S` prints it (marked as the agent's). */
export function hookRule(chain: string): string {
  return `-A ${chain} -m comment --comment wcf-agent -j ${NAMES.chainName}`;
}

/** Source CIDRs of the agent chain's DROP rules (`iptables -S CHAIN`; the ownership marker rule is not one). */
export async function chainSources(ns: Netns, iptables = 'iptables'): Promise<string[]> {
  return (await ns.exec(iptables, ['-S', NAMES.chainName]))
    .split('\n')
    .filter((l) => l.startsWith('-A') && l !== `-A ${NAMES.chainName} -m comment --comment wcf-agent`)
    .map((l) => /^-A \S+ -s (\S+)(?: ! -i lo ! -o lo)? -j DROP$/.exec(l)?.[1]?.replace(/\/32$/, '') ?? `?? ${l}`);
}

/** How many times `chain` jumps to the agent's chain. */
export async function hookCount(ns: Netns, chain: string, iptables = 'iptables'): Promise<number> {
  return (await ns.exec(iptables, ['-S', chain])).split('\n').filter((l) => l === hookRule(chain)).length;
}
