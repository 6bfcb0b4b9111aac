import { join } from 'node:path';
import type { HitCounter } from '../../firewall/index.js';

/**
 * Running totals of the kernel's hit counters. The kernel's per-address
 * counters start again from zero when their record is re-created (an nft
 * table rebuilt, a hits set destroyed by a flush or a direction change, an
 * iptables chain rebuilt, an address not hit for a week leaving its hits set),
 * so the agent remembers what it last read for each address and side and
 * adds the kernel's value to what came before whenever the kernel's went back.
 * Pure, apart from the file name.
 */

export const HIT_TOTALS_FILE = 'hit-totals.json';

export function hitTotalsPath(stateDir: string): string {
  return join(stateDir, HIT_TOTALS_FILE);
}

export interface HitRecord {
  /** Packets and bytes counted by earlier kernel records of this address, now gone. */
  readonly basePackets: number;
  readonly baseBytes: number;
  /** What the kernel showed at the last read. */
  readonly lastPackets: number;
  readonly lastBytes: number;
}

/** Key: `<side> <ip>`. */
export type HitTotals = Record<string, HitRecord>;

export interface HitTotal {
  readonly ip: string;
  readonly side: 'in' | 'out';
  readonly packets: number;
  readonly bytes: number;
}

/** Parse the saved file's content; anything unusable is an empty history (totals then start from the kernel's). */
export function parseHitTotals(raw: unknown): HitTotals {
  const out: HitTotals = {};
  const entries = (raw as { entries?: unknown } | null)?.entries;
  if (!entries || typeof entries !== 'object') return out;
  for (const [key, v] of Object.entries(entries as Record<string, unknown>)) {
    const r = v as Partial<HitRecord> | null;
    const nums = [r?.basePackets, r?.baseBytes, r?.lastPackets, r?.lastBytes];
    if (!/^(in|out) \S+$/.test(key) || !nums.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)) continue;
    out[key] = r as HitRecord;
  }
  return out;
}

/**
 * Combine a kernel read with the saved history: totals that never go back,
 * and the history to save next. An address the kernel no longer shows keeps
 * its total (its record left the kernel: the total is all its base now).
 */
export function mergeHits(saved: HitTotals, kernel: readonly HitCounter[]): { totals: HitTotal[]; next: HitTotals } {
  const next: HitTotals = {};
  for (const [key, r] of Object.entries(saved)) {
    next[key] = { basePackets: r.basePackets + r.lastPackets, baseBytes: r.baseBytes + r.lastBytes, lastPackets: 0, lastBytes: 0 };
  }
  for (const h of kernel) {
    const key = `${h.side} ${h.ip}`;
    const before = saved[key];
    // Unchanged or grown: the same kernel record, its value replaces the last one; smaller: a new record.
    const sameRecord = before !== undefined && h.packets >= before.lastPackets && h.bytes >= before.lastBytes;
    const base = before === undefined ? { p: 0, b: 0 } : sameRecord ? { p: before.basePackets, b: before.baseBytes } : { p: before.basePackets + before.lastPackets, b: before.baseBytes + before.lastBytes };
    next[key] = { basePackets: base.p, baseBytes: base.b, lastPackets: h.packets, lastBytes: h.bytes };
  }
  const totals: HitTotal[] = [];
  for (const [key, r] of Object.entries(next)) {
    const [side, ip] = key.split(' ') as ['in' | 'out', string];
    const packets = r.basePackets + r.lastPackets;
    if (packets > 0) totals.push({ ip, side, packets, bytes: r.baseBytes + r.lastBytes });
  }
  return { totals, next };
}
