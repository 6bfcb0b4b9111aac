import type { IndicatorMap } from '../../feed/indicator.js';
import { fromNumber, toCidr } from '../../net/ipv4.js';
import type { Scoring } from '../../score/decay.js';
import type { HitTotal } from '../state/hit-totals.js';
import type { AppliedSet } from '../state/store.js';

/** One line of `hits`: an indicator that matched traffic on one side. */
export interface HitRow {
  /** The indicator (address or network) as applied; the bare address when no applied entry covers it any more. */
  readonly ip: string;
  readonly direction: 'in' | 'out';
  readonly packets: number;
  readonly bytes: number;
  /** Why it is blocked (`manual`, `score`); null when it is no longer applied. */
  readonly reason: string | null;
  /** Decayed score now, from the cached feed (4 significant digits); null for manual blocks or when unknown. */
  readonly score: number | null;
  /** Epoch seconds the entry leaves the kernel; null = no expiry or not applied. */
  readonly expires: number | null;
}

/**
 * Per-address totals grouped by the applied indicator covering each address
 * (the narrowest), highest packet count first, then address. Pure.
 */
export function hitRows(
  totals: readonly HitTotal[],
  applied: AppliedSet | undefined,
  feed: IndicatorMap | undefined,
  scoring: Scoring,
  now: number,
): HitRow[] {
  const byCidr = new Map<string, { reason: string; expiresAt: number | null }>();
  const prefixes = new Set<number>();
  for (const e of applied?.entries ?? []) {
    const c = toCidr(e.cidr);
    if (!c) continue;
    byCidr.set(c.text, { reason: e.reason, expiresAt: e.expiresAt });
    prefixes.add(c.prefix);
  }
  const lengths = [...prefixes].sort((a, b) => b - a);
  const indicatorOf = (ip: string): string => {
    const c = toCidr(ip);
    if (!c) return ip;
    if (byCidr.has(c.text)) return c.text;
    for (const p of lengths) {
      if (p > c.prefix) continue;
      const mask = p === 0 ? 0 : (0xffffffff << (32 - p)) >>> 0;
      const text = fromNumber((c.start & mask) >>> 0, p).text;
      if (byCidr.has(text)) return text;
    }
    return c.text;
  };
  const rows = new Map<string, { ip: string; direction: 'in' | 'out'; packets: number; bytes: number }>();
  for (const t of totals) {
    const ip = indicatorOf(t.ip);
    const key = `${t.side} ${ip}`;
    const row = rows.get(key) ?? { ip, direction: t.side, packets: 0, bytes: 0 };
    row.packets += t.packets;
    row.bytes += t.bytes;
    rows.set(key, row);
  }
  const out: HitRow[] = [];
  for (const r of rows.values()) {
    const entry = byCidr.get(r.ip);
    let score: number | null = null;
    const c = toCidr(r.ip);
    if (entry?.reason !== 'manual' && feed && c) {
      const i = feed.find(c.start, c.prefix);
      if (i >= 0) score = Number(scoring.score(feed.scoreAt(i), now - feed.tsAt(i)).toPrecision(4));
    }
    // Whole epoch seconds, as every time the CLI prints: the solved expiry carries a fraction.
    out.push({ ...r, reason: entry?.reason ?? null, score, expires: entry?.expiresAt == null ? null : Math.floor(entry.expiresAt) });
  }
  return out.sort((a, b) => b.packets - a.packets || a.ip.localeCompare(b.ip) || a.direction.localeCompare(b.direction));
}
