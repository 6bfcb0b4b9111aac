import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AppliedColumns } from '../../../../../src/agent/state/applied-columns.js';
import { historyStats } from '../../../../../src/agent/state/history/files.js';
import { findInHistory } from '../../../../../src/agent/state/history/read.js';
import { StateStore } from '../../../../../src/agent/state/store.js';
import { leaveReason } from '../../../../../src/policy/leave-reasons.js';
import { ProtectedSet } from '../../../../../src/policy/protect.js';
import { parseCidr } from '../../../../../src/net/ipv4.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function open(dir?: string, o: { maxMb?: number; dryRun?: boolean } = {}) {
  const d = dir ?? mkdtempSync(join(tmpdir(), 'wcf-applied-history-'));
  if (!dir) dirs.push(d);
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (t: string) => lines.push(JSON.parse(t) as Record<string, unknown>) });
  return { dir: d, s: new StateStore(d, logger, o), lines };
}
const ALL = { kind: 'addresses', start: 0, end: 0xffffffff } as const;
function cidr(t: string) {
  const r = parseCidr(t);
  if (!r.ok) throw new Error(t);
  return r.cidr;
}

function columns(entries: readonly [string, 'score' | 'manual' | 'local' | 'url', number | null, number?][]): AppliedColumns {
  const c = new AppliedColumns(entries.length);
  for (const [t, reason, expires, score] of entries) {
    const x = cidr(t);
    c.push(x.start, x.prefix, reason, expires, score);
  }
  return c;
}

describe('the change history fed by the applied records', () => {
  it('records what each write added, changed and removed, with why, across processes', () => {
    const { dir, s, lines } = open(undefined, { dryRun: false });
    const protectedSet = ProtectedSet.of([cidr('198.51.100.7')]);
    s.saveApplied({ ts: 1000, plugin: 'nftables', entries: columns([['203.0.113.9', 'score', 99_000, 9.5], ['198.51.100.7', 'manual', null], ['192.0.2.0/24', 'score', 1500, 6]]) }, { cause: 'cycle', now: 1000 });
    // Another process (a manual sync): reads the record back to compare.
    const other = open(dir, { dryRun: false });
    other.s.saveApplied(
      { ts: 2000, plugin: 'nftables', entries: columns([['203.0.113.9', 'manual', null]]) },
      { cause: 'poll', now: 2000, leave: (start, prefix, reason, expiresAt) => leaveReason({ now: 2000, protectedSet }, start, prefix, reason, expiresAt) },
    );
    const ev = findInHistory(dir, ALL).events.map((e) => [e.ts, e.entry, e.change, e.reason, e.cause, e.previous?.reason ?? null]);
    expect(ev).toEqual([
      [1000, '203.0.113.9', 'added', 'score', 'cycle', null],
      [1000, '198.51.100.7', 'added', 'manual', 'cycle', null],
      [1000, '192.0.2.0/24', 'added', 'score', 'cycle', null],
      // The /24's kernel timeout ran out at 1500, before this write: recorded at its own time.
      [1500, '192.0.2.0/24', 'removed', 'expired', 'expiry', 'score'],
      [2000, '203.0.113.9', 'updated', 'manual', 'poll', 'score'],
      [2000, '198.51.100.7', 'removed', 'protected', 'poll', 'manual'],
    ]);
    const added = findInHistory(dir, { kind: 'addresses', start: 0xcb007109, end: 0xcb007109 }).events[0]!;
    expect(added).toMatchObject({ score: 9.5, rank: 1, expires: 99_000 });
    // One structured line per write, counts by reason as flat fields.
    expect(lines.find((l) => l.cause === 'cycle')).toMatchObject({ history: 'addresses', added: 3, removed: 0, added_score: 2, added_manual: 1 });
    expect(other.lines.find((l) => l.cause === 'poll')).toMatchObject({ added: 0, removed: 2, updated: 1, removed_expired: 1, removed_protected: 1, updated_manual: 1 });
  });

  it('a dry run beside the configured backend is not what the host enforces: not recorded; the configured dry-run backend is', () => {
    const { dir, s } = open(undefined, { dryRun: false });
    s.saveApplied({ ts: 1000, plugin: 'dry-run', entries: columns([['203.0.113.9', 'score', null]]) }, { cause: 'cycle', now: 1000 });
    expect(historyStats(dir).bytes).toBe(0);
    const configured = open(undefined, { dryRun: true });
    configured.s.saveApplied({ ts: 1000, plugin: 'dry-run', entries: columns([['203.0.113.9', 'score', null]]) }, { cause: 'cycle', now: 1000 });
    expect(findInHistory(configured.dir, ALL).events).toHaveLength(1);
  });

  it('a write that changes nothing but expiries is not recorded now when asked (the restore); the next write records the expiry at its time', () => {
    const { dir, s } = open();
    s.saveApplied({ ts: 1000, plugin: 'nftables', entries: columns([['203.0.113.9', 'score', 1500], ['203.0.113.10', 'manual', null]]) }, { cause: 'cycle', now: 1000 });
    const kept = columns([['203.0.113.10', 'manual', null]]);
    expect(s.saveApplied({ ts: 1000, plugin: 'nftables', entries: kept }, { cause: 'restore', now: 2000, onlyIfChanged: true })).toBe(false);
    expect(findInHistory(dir, ALL).events).toHaveLength(2);
    s.saveApplied({ ts: 3000, plugin: 'nftables', entries: kept }, { cause: 'cycle', now: 3000 });
    expect(findInHistory(dir, ALL).events.at(-1)).toMatchObject({ ts: 1500, entry: '203.0.113.9', change: 'removed', reason: 'expired', cause: 'expiry' });
  });

  it("the daemon's on_stop flush: every entry removed (flushed) with the record kept; the restore of the next start adds them back", () => {
    const { dir, s } = open();
    const set = columns([['203.0.113.9', 'score', null], ['203.0.113.10', 'manual', null]]);
    s.saveApplied({ ts: 1000, plugin: 'nftables', entries: set }, { cause: 'cycle', now: 1000 });
    s.historyOfStopFlush('nftables');
    expect(s.loadApplied('nftables')?.entries).toHaveLength(2);
    const next = open(dir);
    expect(next.s.saveApplied({ ts: 1000, plugin: 'nftables', entries: set }, { cause: 'restore', now: Math.floor(Date.now() / 1000) + 10, onlyIfChanged: true })).toBe(true);
    const ev = findInHistory(dir, ALL).events.filter((e) => e.entry === '203.0.113.9').map((e) => `${e.change} (${e.reason}) ${e.cause}`);
    expect(ev).toEqual(['added (score) cycle', 'removed (flushed) flush', 'added (score) restore']);
  });

  it('over a simulated month of hourly cycles at 1% change an hour, stays within history_max_mb and keeps the newest changes', () => {
    const { dir, s } = open(undefined, { maxMb: 0.125 });
    const n = 1000;
    const t0 = 1_790_000_000;
    const current = Array.from({ length: n }, (_, i) => 0x0a000000 + i);
    let next = 0x0b000000;
    let biggest = 0;
    for (let h = 0; h < 30 * 24; h++) {
      // 1% of the entries leave and as many new ones come, each hour.
      for (let k = 0; k < n / 100; k++) current[(h * 7 + k * 97) % n] = next++;
      const c = new AppliedColumns(n);
      for (const start of current) c.push(start, 32, 'score', t0 + 86_400 * 40, 5);
      s.saveApplied({ ts: t0 + h * 3600, plugin: 'nftables', entries: c }, { cause: 'cycle', now: t0 + h * 3600, leave: () => ({ reason: 'below_threshold', score: 2, rank: null }) });
      biggest = Math.max(biggest, historyStats(dir).bytes);
    }
    expect(biggest).toBeLessThanOrEqual(0.125 * 1024 * 1024);
    const found = findInHistory(dir, ALL);
    // The oldest were dropped; the last hour's changes are there.
    expect(found.oldest!).toBeGreaterThan(t0);
    expect(found.events.filter((e) => e.ts === t0 + (30 * 24 - 1) * 3600)).toHaveLength(2 * (n / 100));
  });
});
