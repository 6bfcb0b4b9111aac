import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import pino from 'pino';
import { Scheduler } from '../../../../src/agent/daemon/scheduler.js';
import { nextCycleDelayMs, type DelayInput } from '../../../../src/agent/daemon/scheduler.js';

/**
 * The daemon's timer chain (fake timers: virtual time, no sleeps) and its
 * delay computation (pure).
 */

const logger = pino({ level: 'silent' });

interface Probe {
  runs: { start: number; end: number }[];
  active: number;
  maxActive: number;
}

/** A run that takes `ms` of (virtual) time and records when it ran and how many ran at once. */
function slowRun(probe: Probe, ms: number, ok = true): () => Promise<boolean> {
  return async () => {
    const start = Date.now();
    probe.active++;
    probe.maxActive = Math.max(probe.maxActive, probe.active);
    await new Promise((r) => setTimeout(r, ms));
    probe.active--;
    probe.runs.push({ start, end: Date.now() });
    return ok;
  };
}
const newProbe = (): Probe => ({ runs: [], active: 0, maxActive: 0 });

describe('Scheduler', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('never overlaps a run slower than the interval; the next starts a full delay after the last ended', async () => {
    const probe = newProbe();
    const s = new Scheduler({ logger, run: slowRun(probe, 500), delayAfter: () => 100 });
    s.start();
    await vi.advanceTimersByTimeAsync(5900);
    const stopped = s.stop(); // waits for the 10th run, in flight
    await vi.advanceTimersByTimeAsync(500);
    await stopped;
    expect(probe.maxActive).toBe(1);
    // 600 ms per cycle (500 run + 100 wait): 10 cycles in 6 s.
    expect(probe.runs.length).toBe(10);
    for (let k = 1; k < probe.runs.length; k++) expect(probe.runs[k]!.start - probe.runs[k - 1]!.end).toBe(100);
  });

  it('asking for a run while one is in flight joins it instead of starting a second', async () => {
    const probe = newProbe();
    const s = new Scheduler({ logger, run: slowRun(probe, 1000), delayAfter: () => 5000 });
    s.start();
    await vi.advanceTimersByTimeAsync(100);
    s.resume(true); // e.g. a SIGHUP reload asking for a cycle now
    s.resume(true);
    await vi.advanceTimersByTimeAsync(1000);
    expect(probe.maxActive).toBe(1);
    expect(probe.runs.length).toBe(1);
    await s.stop();
  });

  it('a run asked for while a timer is pending replaces the pending timer: one chain, not two', async () => {
    // Two SIGHUPs close together: the first reload resumes (a timer is set), the
    // second resumes with "run now". There must still be one timer chain.
    const probe = newProbe();
    const s = new Scheduler({ logger, run: slowRun(probe, 0), delayAfter: () => 1000 });
    s.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(probe.runs.length).toBe(1); // and a timer for t+1000 is pending
    await s.pause();
    s.resume(false); // reload 1 failed: back on schedule (timer pending for t+1000)
    await vi.advanceTimersByTimeAsync(300);
    s.resume(true); // reload 2 succeeded: run now (t+300)
    await vi.advanceTimersByTimeAsync(0);
    expect(probe.runs.length).toBe(2);
    await vi.advanceTimersByTimeAsync(10_000);
    await s.stop();
    // One chain: a run every 1000 ms (plus the 1 ms a run takes) after the second one.
    expect(probe.runs.length).toBe(11);
    for (let k = 2; k < probe.runs.length; k++) expect(probe.runs[k]!.start - probe.runs[k - 1]!.end).toBe(1000);
    expect(probe.maxActive).toBe(1);
  });

  it('the delay is computed afresh after each run, from how it went', async () => {
    const results = [true, false, false, true];
    const seen: boolean[] = [];
    const scheduled: number[] = [];
    let k = 0;
    const s = new Scheduler({
      logger,
      run: async () => results[k++ % results.length]!,
      delayAfter: (ok) => {
        seen.push(ok);
        return ok ? 1000 : 100;
      },
      onScheduled: (at) => scheduled.push(at),
    });
    const t0 = Date.now();
    s.start();
    await vi.advanceTimersByTimeAsync(1000 + 100 + 100 + 1000);
    await s.stop();
    expect(seen.slice(0, 4)).toEqual([true, false, false, true]);
    expect(scheduled.slice(0, 4).map((at) => at - t0)).toEqual([1000, 1100, 1200, 2200]);
  });

  it('a run that throws is logged and the chain goes on, as after a failure', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'error' }, { write: (l: string) => void lines.push(l) });
    let calls = 0;
    const seen: boolean[] = [];
    const s = new Scheduler({
      logger: log,
      run: async () => {
        calls++;
        if (calls === 1) throw new Error('boom');
        return true;
      },
      delayAfter: (ok) => {
        seen.push(ok);
        return 50;
      },
    });
    s.start();
    await vi.advanceTimersByTimeAsync(120);
    await s.stop();
    expect(calls).toBe(3);
    expect(seen[0]).toBe(false);
    expect(lines.join('')).toMatch(/cycle crashed: boom/);
  });

  it('pause waits for the run in flight and schedules nothing until resumed', async () => {
    const probe = newProbe();
    const s = new Scheduler({ logger, run: slowRun(probe, 300), delayAfter: () => 100 });
    s.start();
    await vi.advanceTimersByTimeAsync(50);
    let paused = false;
    const p = s.pause().then(() => (paused = true));
    await vi.advanceTimersByTimeAsync(200);
    expect(paused).toBe(false); // still in flight
    await vi.advanceTimersByTimeAsync(100);
    await p;
    expect(probe.runs.length).toBe(1);
    await vi.advanceTimersByTimeAsync(5000);
    expect(probe.runs.length).toBe(1);
    s.resume(false);
    await vi.advanceTimersByTimeAsync(99);
    expect(probe.runs.length).toBe(1);
    await vi.advanceTimersByTimeAsync(1 + 300);
    expect(probe.runs.length).toBe(2);
    await s.stop();
  });

  it('stop waits for the run in flight, then nothing runs again (resume included)', async () => {
    const probe = newProbe();
    const s = new Scheduler({ logger, run: slowRun(probe, 300), delayAfter: () => 10 });
    s.start();
    await vi.advanceTimersByTimeAsync(100);
    let stopped = false;
    const p = s.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(199);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await p;
    s.resume(true);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(probe.runs.length).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('nextCycleDelayMs', () => {
  const MIN = 60_000;
  const input = (over: Partial<DelayInput>): DelayInput => ({
    ok: true,
    failures: 0,
    syncTimeMinutes: 15,
    jitterSeconds: 30,
    minuteMs: MIN,
    random: () => 0.5,
    ...over,
  });
  const arb = fc.record({
    syncTimeMinutes: fc.integer({ min: 1, max: 10_080 }),
    jitterSeconds: fc.double({ min: 0, max: 3600, noNaN: true }),
    failures: fc.integer({ min: 1, max: 1_000_000 }),
    r: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  });

  it('after a success: sync_time plus a jitter within 0..jitter_seconds', () => {
    fc.assert(
      fc.property(arb, ({ syncTimeMinutes, jitterSeconds, r }) => {
        const d = nextCycleDelayMs(input({ ok: true, syncTimeMinutes, jitterSeconds, random: () => r }));
        expect(d).toBeGreaterThanOrEqual(syncTimeMinutes * MIN);
        expect(d).toBeLessThanOrEqual(syncTimeMinutes * MIN + jitterSeconds * 1000);
      }),
      { numRuns: 2000 },
    );
    expect(nextCycleDelayMs(input({ random: () => 0 }))).toBe(15 * MIN);
    expect(nextCycleDelayMs(input({ random: () => 0.999 }))).toBeCloseTo(15 * MIN + 29_970, 0);
    // The jitter scales with a shortened test minute like everything else.
    expect(nextCycleDelayMs(input({ minuteMs: 100, random: () => 0.5 }))).toBe(1500 + 25);
  });

  it('after failures: bounded by the regular schedule, at least a second, jittered within half to all of the backoff', () => {
    fc.assert(
      fc.property(arb, ({ syncTimeMinutes, jitterSeconds, failures, r }) => {
        const d = nextCycleDelayMs(input({ ok: false, failures, syncTimeMinutes, jitterSeconds, random: () => r }));
        expect(Number.isFinite(d)).toBe(true);
        expect(d).toBeLessThanOrEqual(syncTimeMinutes * MIN);
        expect(d).toBeGreaterThanOrEqual(1000);
        const backoff = Math.min(syncTimeMinutes * MIN, 30_000 * 2 ** Math.min(failures - 1, 10));
        expect(d).toBeGreaterThanOrEqual(Math.max(1000, backoff / 2) - 1e-6);
        expect(d).toBeLessThanOrEqual(backoff);
      }),
      { numRuns: 2000 },
    );
  });

  it('backs off exponentially from half a minute and stops growing', () => {
    const full = (failures: number) => nextCycleDelayMs(input({ ok: false, failures, syncTimeMinutes: 10_080, random: () => 0.999999 }));
    expect([1, 2, 3, 4].map((f) => Math.round(full(f) / 1000))).toEqual([30, 60, 120, 240]);
    // Capped at 2^10 half-minutes (about 8.5 h), however long the outage.
    expect(full(11)).toBe(full(12));
    expect(full(1e9)).toBe(full(11));
    expect(Math.round(full(11) / 1000)).toBe(30 * 1024);
    // With a 15-minute sync_time, a long outage retries every 7.5..15 minutes.
    const d = nextCycleDelayMs(input({ ok: false, failures: 50, random: () => 0 }));
    expect(d).toBe(7.5 * MIN);
  });
});
