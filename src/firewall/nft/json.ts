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

/** Sum of every `counter` statement in a table listing (`nft -j -t list table`: terse, no set elements). */
export function parseNftCounters(json: string): DropCounters {
  const out = { packets: 0, bytes: 0 };
  for (const item of parseNftJson(json)) {
    const rule = item.rule as { expr?: unknown } | undefined;
    if (!rule || !Array.isArray(rule.expr)) continue;
    for (const e of rule.expr as Array<Record<string, unknown>>) {
      const c = e?.counter as { packets?: unknown; bytes?: unknown } | undefined;
      if (c && typeof c.packets === 'number' && typeof c.bytes === 'number') {
        out.packets += c.packets;
        out.bytes += c.bytes;
      }
    }
  }
  return out;
}
