// The pure rules behind a fleet-friendly agent: the start-up delay, where a decision poll starts
// (its answer's merge: test/unit/feed/decisions.test.ts), the report's cap, and the answers kept
// for conditional requests.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startupDelayMs } from '../../../../src/agent/daemon/startup-delay.js';
import { cursorLimit, newestTs, pollStart, SETTLED_SECONDS } from '../../../../src/agent/daemon/decision-cursor.js';
import { capReportList, reportEntryBytes } from '../../../../src/agent/cycle/report-cap.js';
import { AppliedColumns } from '../../../../src/agent/state/applied-columns.js';
import { indicatorMap as map } from '../../../helpers/indicator-map.js';
import { TextBuilder } from '../../../../src/util/text-builder.js';
import { ValidatorCache } from '../../../../src/api/validators.js';
import { AgentMetrics } from '../../../../src/metrics/registry.js';
import type { CycleOutcome } from '../../../../src/agent/cycle/types.js';

const NOW = 1_800_000_000;
const MIN = 60_000;

describe('start-up delay', () => {
  it('is 0 without a successful sync, with one older than sync_time, one from the future, or startup_delay_seconds 0', () => {
    const base = { now: NOW, syncTimeMinutes: 15, maxDelaySeconds: 60, minuteMs: MIN, random: () => 0.99 };
    expect(startupDelayMs({ ...base, lastSuccessAt: undefined })).toBe(0);
    expect(startupDelayMs({ ...base, lastSuccessAt: NOW - 15 * 60 })).toBe(0);
    expect(startupDelayMs({ ...base, lastSuccessAt: NOW + 5 })).toBe(0);
    expect(startupDelayMs({ ...base, lastSuccessAt: NOW - 60, maxDelaySeconds: 0 })).toBe(0);
  });

  it('with a recent sync: a random 0..startup_delay_seconds, never past the sync that is due', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 * 3600 }), fc.integer({ min: 1, max: 180 }), fc.integer({ min: 1, max: 3600 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (age, sync, max, r) => {
        const ms = startupDelayMs({ lastSuccessAt: NOW - age, now: NOW, syncTimeMinutes: sync, maxDelaySeconds: max, minuteMs: MIN, random: () => r });
        const dueInMs = (sync * 60 - age) * 1000;
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThanOrEqual(Math.max(0, Math.min(dueInMs, max * 1000)));
        if (dueInMs > 0) expect(ms).toBeCloseTo(Math.min(dueInMs, max * 1000) * r, 6);
      }),
    );
  });
});

describe('decision polls', () => {
  it('start at the newest record until the server clock has passed it, then after it', () => {
    const known = map([['192.0.2.1', NOW - 100], ['192.0.2.2', NOW - 10]]);
    expect(pollStart(known, undefined, NOW)).toBe(NOW - 10);
    expect(pollStart(known, NOW - 10 + SETTLED_SECONDS - 1, NOW)).toBe(NOW - 10);
    expect(pollStart(known, NOW - 10 + SETTLED_SECONDS, NOW)).toBe(NOW - 9);
  });

  it("never start past the server's clock: a record stamped beyond it does not move the start, however near", () => {
    // 550 s ahead: inside the 600 s skew a feed pull allows, still not a place to start from.
    const known = map([['192.0.2.3', NOW + 550], ['192.0.2.4', NOW - 50]]);
    expect(pollStart(known, NOW, NOW)).toBe(NOW - 49);
    expect(pollStart(map([['192.0.2.3', NOW + 10 * 86_400], ['192.0.2.4', NOW - 50]]), NOW, NOW)).toBe(NOW - 49);
    // Once the server's clock has passed it, it is a record like any other.
    expect(pollStart(known, NOW + 552, NOW + 552)).toBe(NOW + 551);
    // Without the server's clock, this host's stands for it (and the start stays inclusive).
    expect(pollStart(known, undefined, NOW)).toBe(NOW - 50);
    // The server's clock behind this host's: the server's counts, not this host's.
    expect(pollStart(map([['192.0.2.5', NOW - 20], ['192.0.2.6', NOW - 100]]), NOW - 30, NOW)).toBe(NOW - 99);
  });

  it('the cursor limit is the server clock when known, else this host\'s', () => {
    expect(cursorLimit(NOW - 30, NOW)).toBe(NOW - 30);
    expect(cursorLimit(undefined, NOW)).toBe(NOW);
    expect(newestTs(map([['192.0.2.1', 10], ['192.0.2.2', 30]]), 29)).toBe(10);
  });
});

describe('the report cap', () => {
  it('counts each entry as the report writes it', () => {
    const scratch = new TextBuilder(32);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 }), (start, prefix) => {
        expect(reportEntryBytes(start, prefix)).toBe(scratch.reset().cidr(start, prefix).latin1().length + 3);
      }),
    );
  });

  it('keeps the list as it is when it fits; otherwise manual and local entries first, then the selection order, within the bytes', () => {
    const cols = new AppliedColumns(6);
    cols.push(0x0a000001, 32, 'score', null);
    cols.push(0x0a000002, 32, 'manual', null);
    cols.push(0x0a000003, 32, 'score', null);
    cols.push(0x0a000004, 32, 'local', null);
    cols.push(0x0a000005, 32, 'url', null);
    cols.push(0x0a000006, 32, 'score', null);
    const each = reportEntryBytes(0x0a000001, 32);
    expect(capReportList(cols, 6 * each).list).toBe(cols);
    const capped = capReportList(cols, 4 * each + 1);
    expect(capped).toMatchObject({ entries: 4, total: 6, bytes: 4 * each });
    const texts = Array.from({ length: capped.list.length }, (_, i) => ('starts' in capped.list ? capped.list.starts[i]! : 0) & 255);
    expect(texts).toEqual([2, 4, 1, 3]);
    const entries = [0, 1, 2, 3, 4, 5].map((i) => cols.entry(i));
    expect(capReportList(entries, 4 * each + 1).list).toEqual(['10.0.0.2', '10.0.0.4', '10.0.0.1', '10.0.0.3']);
  });
});

describe('answers kept for conditional requests', () => {
  it('only answers with a validator are kept, sent back as conditions, within the budget', () => {
    const c = new ValidatorCache(1000);
    c.remember('u1', {}, 'x'.repeat(10), undefined);
    expect(c.conditions('u1')).toEqual({});
    c.remember('u1', { etag: '"a"', 'last-modified': 'Wed, 25 Nov 2026 10:00:00 GMT' }, 'x'.repeat(200), undefined);
    expect(c.conditions('u1')).toEqual({ 'if-none-match': '"a"', 'if-modified-since': 'Wed, 25 Nov 2026 10:00:00 GMT' });
    c.remember('u2', { etag: '"b"\r\nx-evil: 1' }, 'y', undefined); // not a header value we send back
    expect(c.conditions('u2')).toEqual({});
    for (let i = 0; i < 10; i++) c.remember(`v${i}`, { etag: `"${i}"` }, 'z'.repeat(200), undefined);
    expect(c.get('u1')).toBeUndefined(); // the oldest went first
    expect(c.get('v9')?.text).toBe('z'.repeat(200));
  });
});

describe('metrics', () => {
  it('say how many entries the last state report listed and whether it was shortened', async () => {
    const m = new AgentMetrics();
    const record = { ts: NOW, ok: true, code: 0, durationMs: 1, plugin: 'dry-run', applied: 100_000, byReason: { manual: 1, score: 99_999, local: 0 }, skipped: { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 }, fullPull: true, running: true };
    m.observeCycle({ record, settings: { maximum_rules: 100_000, score_threshold: 1, sync_time: 15, running: true, version: null }, reported: true, stateReport: { at: NOW, entries: 14_000, total: 100_000, bytes: 250_000, shortened: true, ok: true } } as CycleOutcome);
    const text = await m.registry.metrics();
    expect(text).toMatch(/^wcf_agent_report_entries 14000$/m);
    expect(text).toMatch(/^wcf_agent_report_shortened 1$/m);
  });
});
