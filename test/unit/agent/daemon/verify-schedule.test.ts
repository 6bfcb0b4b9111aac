import { describe, expect, it } from 'vitest';
import { MIN_GAP_MS, PERIODIC_MS, VerifySchedule } from '../../../../src/agent/daemon/verify-schedule.js';
import { KernelTruth } from '../../../../src/agent/daemon/kernel-truth.js';

describe('when the watcher verifies the entries', () => {
  const setup = () => {
    let now = 1_000_000;
    return { s: new VerifySchedule(() => now), advance: (ms: number) => (now += ms) };
  };

  it('when something was suspected, with the first reason kept until a verification starts', () => {
    const { s } = setup();
    s.started();
    expect(s.wanted(PERIODIC_MS)).toBeUndefined();
    s.suspect('changed by nft (pid 7)');
    s.suspect('the firewall event source stopped');
    expect(s.wanted(PERIODIC_MS)).toBe('changed by nft (pid 7)');
    s.started();
    expect(s.wanted(PERIODIC_MS)).toBeUndefined();
  });

  it('periodically with nothing suspected', () => {
    const { s, advance } = setup();
    s.started();
    s.ended(100);
    advance(PERIODIC_MS - 1);
    expect(s.wanted(PERIODIC_MS)).toBeUndefined();
    advance(1);
    expect(s.wanted(PERIODIC_MS)).toBe('periodic check of the entries');
  });

  it('never back to back: at least MIN_GAP_MS, and at least as long as the last one took, after it ended', () => {
    const { s, advance } = setup();
    s.started();
    s.ended(300);
    expect(s.waitMs()).toBe(MIN_GAP_MS);
    advance(MIN_GAP_MS);
    expect(s.waitMs()).toBe(0);
    s.started();
    advance(6000);
    s.ended(6000);
    expect(s.waitMs()).toBe(6000);
    advance(5999);
    expect(s.waitMs()).toBe(1);
  });
});

describe('what the daemon knows of the kernel', () => {
  it('damage stays until a look after the repair finds the kernel as applied, and says how much is missing', () => {
    let now = 10_000;
    const t = new KernelTruth(() => now);
    expect(t.get().state).toBe('unknown');
    t.held('every entry applied is in the kernel');
    expect(t.get()).toEqual({ state: 'held', reason: 'every entry applied is in the kernel', confirmedAt: 10_000, missing: 0 });
    now = 20_000;
    t.damaged('20000 of 100000 entries may be missing from the kernel', 20_000);
    expect(t.get()).toMatchObject({ state: 'damaged', missing: 20_000, confirmedAt: 10_000 });
    expect(t.damagedSince).toBe(20_000);
    now = 25_000;
    t.written('repaired');
    expect(t.get()).toMatchObject({ state: 'damaged', missing: 20_000 });
    now = 28_000;
    t.held('every entry applied is in the kernel (100000 checked)');
    expect(t.get()).toMatchObject({ state: 'held', confirmedAt: 28_000, missing: 0 });
    expect(t.damagedSince).toBeUndefined();
  });
});
