import { FirewallError } from '../../errors.js';
import type { DropCounters } from '../plugin.js';

/** One object of `nft -j` output (`{table: ...}`, `{set: ...}`, `{rule: ...}`...). */
export type NftItem = Record<string, unknown>;

/** The `nftables` array of `nft -j` output: the one place nft JSON is parsed. */
export function parseNftJson(text: string): NftItem[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new FirewallError(`cannot parse nft JSON output: ${(err as Error).message}`, { cause: err });
  }
  const items = (doc as { nftables?: unknown } | null)?.nftables;
  if (!Array.isArray(items)) throw new FirewallError('cannot parse nft JSON output: no "nftables" array');
  return items.filter((i): i is NftItem => i !== null && typeof i === 'object');
}

/**
 * The drop total from the agent's drops set (`nft -j list set inet T <set>-drops`): the sum of
 * its elements' counters (one element, the family, in practice). No element yet: nothing blocked.
 */
export function parseNftDrops(json: string): DropCounters {
  const out = { packets: 0, bytes: 0 };
  for (const item of parseNftJson(json)) {
    const set = item.set as { elem?: unknown } | undefined;
    if (!set || !Array.isArray(set.elem)) continue;
    for (const e of set.elem as Array<Record<string, unknown>>) {
      const c = (e?.elem as { counter?: { packets?: unknown; bytes?: unknown } } | undefined)?.counter;
      if (c && typeof c.packets === 'number' && typeof c.bytes === 'number') {
        out.packets += c.packets;
        out.bytes += c.bytes;
      }
    }
  }
  return out;
}
