import { parseCidr, type Cidr } from '../net/ipv4.js';
import type { FeedItem } from '../api/wire.js';

/** A feed item reduced to what selection needs, keyed by its canonical CIDR. */
export interface Indicator {
  readonly cidr: Cidr;
  /** Epoch seconds of the record (the decay clock starts here). */
  readonly ts: number;
  /** Score at `ts` (S in the decay formula). */
  readonly score: number;
}

export type ToIndicator = { ok: true; indicator: Indicator } | { ok: false; error: string };

/** Parse one validated feed item's address strictly; networks normalised to their network address. */
export function toIndicator(item: FeedItem): ToIndicator {
  const r = parseCidr(item.ip);
  if (!r.ok) return { ok: false, error: r.error };
  return { ok: true, indicator: { cidr: r.cidr, ts: item.ts, score: item.score } };
}

/**
 * De-duplicating collection: the newest record of an address wins; on equal ts
 * the one seen later in the stream wins (the server's latest word).
 */
export class IndicatorMap {
  readonly byCidr = new Map<string, Indicator>();

  upsert(ind: Indicator): void {
    const prev = this.byCidr.get(ind.cidr.text);
    if (prev === undefined || ind.ts >= prev.ts) this.byCidr.set(ind.cidr.text, ind);
  }

  get size(): number {
    return this.byCidr.size;
  }

  values(): IterableIterator<Indicator> {
    return this.byCidr.values();
  }
}
