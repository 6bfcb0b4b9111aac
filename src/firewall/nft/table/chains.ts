import type { CommandRunner } from '../../../exec/runner.js';
import { parseNftJson } from '../json.js';
import { READ_QUICK } from '../read.js';
import { nftChainRules, NFT_REFUSE_CHAIN, type NftHook, type NftLayout } from '../text.js';

/**
 * The agent's chains: what they should be, and what the kernel has, read with `nft -j list
 * chains`. That listing is the one nft 1.0.x answers without fetching set elements (0.01 s and
 * 4 MB beside a million-element set, where `list table`, `list chain` or `list sets` took 18 s
 * and 645 MB), and it says every chain's name, handle, hook, priority and policy: enough to tell
 * a chain of the agent's from one another process added to its table, or one laid out by another
 * version, without reading any rule.
 */

/** One chain as `nft -j list chains` lists it. */
export interface ListedChain {
  readonly name: string;
  readonly handle: number;
  /** Base chains only. */
  readonly hook?: string;
  readonly type?: string;
  readonly prio?: number;
  readonly policy?: string;
}

/** A chain the layout wants: its name, its hook (none: a regular chain) and its rules. */
export interface WantedChain {
  readonly name: string;
  readonly hook?: NftHook;
  readonly rules: readonly string[];
}

/** The refuse chain's rules (REJECT): a TCP reset for TCP, ICMP admin-prohibited for the rest. */
export const REFUSE_RULES = ['meta l4proto tcp reject with tcp reset', 'reject with icmpx admin-prohibited'];

/** The chains of the layout in the order the agent creates them (the refuse chain, then one per hook). */
export function wantedChains(l: NftLayout): WantedChain[] {
  return [
    ...(l.action === 'REJECT' ? [{ name: NFT_REFUSE_CHAIN, rules: REFUSE_RULES }] : []),
    ...l.hooks.map((hook) => ({ name: hook, hook, rules: nftChainRules(l, hook) })),
  ];
}

/** `{ type filter hook H priority P; policy accept; }` for a base chain, nothing for a regular one. */
export function chainSpec(l: NftLayout, c: WantedChain): string {
  return c.hook ? ` { type filter hook ${c.hook} priority ${l.priority}; policy accept; }` : '';
}

/** Whether a listed chain is declared as `want` asks (its rules are not part of a listing). */
export function chainMatches(l: NftLayout, listed: ListedChain, want: WantedChain): boolean {
  if (!want.hook) return listed.hook === undefined;
  return listed.type === 'filter' && listed.hook === want.hook && listed.prio === l.priority && listed.policy === 'accept';
}

/** How a listed chain differs from the wanted one, for people. */
export function chainDiffers(listed: ListedChain, want: WantedChain): string {
  if (!want.hook) return `nft chain ${want.name} is a base chain`;
  return `nft chain ${want.name} has type ${String(listed.type)} hook ${String(listed.hook)} priority ${String(listed.prio)} policy ${String(listed.policy)}`;
}

/** The chains of every table on the host, by `family table`. Cheap at any size (see above). */
export async function listChains(runner: CommandRunner): Promise<Map<string, ListedChain[]>> {
  const out = new Map<string, ListedChain[]>();
  const { stdout } = await runner.run('nft', ['-j', 'list', 'chains'], { readOnly: true, ...READ_QUICK });
  for (const item of parseNftJson(stdout)) {
    const c = item.chain as Record<string, unknown> | undefined;
    if (!c || typeof c.name !== 'string' || typeof c.handle !== 'number') continue;
    const key = `${String(c.family)} ${String(c.table)}`;
    let list = out.get(key);
    if (!list) out.set(key, (list = []));
    list.push({
      name: c.name,
      handle: c.handle,
      ...(typeof c.hook === 'string' ? { hook: c.hook } : {}),
      ...(typeof c.type === 'string' ? { type: c.type } : {}),
      ...(typeof c.prio === 'number' ? { prio: c.prio } : {}),
      ...(typeof c.policy === 'string' ? { policy: c.policy } : {}),
    });
  }
  return out;
}
