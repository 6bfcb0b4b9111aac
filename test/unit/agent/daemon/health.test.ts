import { describe, expect, it } from 'vitest';
import { DaemonHealth, type HealthView } from '../../../../src/agent/daemon/health.js';

/** The liveness rules on a clock the test moves (readiness reads the kernel: test/integration/health.test.ts). */
describe('DaemonHealth.live', () => {
  const setup = () => {
    let now = 1_000_000;
    const view: HealthView = { plugin: undefined, running: true, applied: undefined, cycleDeadlineSeconds: 900, truth: { state: 'unknown', reason: '', missing: 0 }, watched: true };
    const health = new DaemonHealth({ minuteMs: 60_000, view: () => view, now: () => now });
    return { health, advance: (ms: number) => (now += ms), now: () => now };
  };

  it('is alive while starting, between cycles, and during a cycle within its deadline plus ten minutes', async () => {
    const { health, advance, now } = setup();
    expect(health.live()).toEqual({ ok: true, reason: 'alive: starting or stopping' });
    let release!: () => void;
    const cycle = health.during(() => new Promise<void>((r) => (release = r)));
    advance(900_000 + 600_000);
    expect(health.live()).toMatchObject({ ok: true, reason: 'alive: a cycle is running (1500 s)' });
    release();
    await cycle;
    health.scheduled(now() + 60_000);
    expect(health.live()).toEqual({ ok: true, reason: 'alive: next cycle in 60 s' });
  });

  it('a cycle running past its deadline plus ten minutes is a wedged loop', () => {
    const { health, advance } = setup();
    void health.during(() => new Promise(() => undefined));
    advance(1_500_001);
    expect(health.live()).toEqual({ ok: false, reason: 'wedged: a cycle has been running for 1500 s (limit 1500 s)' });
  });

  it('a cycle due for more than a minute that has not started is a wedged loop; a started one clears it', async () => {
    const { health, advance, now } = setup();
    health.scheduled(now() + 1000);
    advance(61_000);
    expect(health.live()).toMatchObject({ ok: true });
    advance(1);
    expect(health.live()).toEqual({ ok: false, reason: 'wedged: the next cycle was due 60 s ago and has not started' });
    await health.during(async () => undefined);
    expect(health.live()).toEqual({ ok: true, reason: 'alive: starting or stopping' });
    health.scheduled(now() + 5000);
    health.stopped();
    advance(3_600_000);
    expect(health.live().ok).toBe(true);
  });

  it('a cycle that throws still ends the busy mark', async () => {
    const { health, advance } = setup();
    await expect(health.during(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    advance(10_000_000);
    expect(health.live().ok).toBe(true);
  });
});
