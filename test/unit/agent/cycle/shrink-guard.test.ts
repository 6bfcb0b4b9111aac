import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import pino from 'pino';
import { checkShrink } from '../../../../src/agent/cycle/shrink-guard.js';
import { runCycle } from '../../../../src/agent/cycle/cycle.js';
import { type CycleOutcome } from '../../../../src/agent/cycle/types.js';
import { StateStore } from '../../../../src/agent/state/store.js';
import { parseConfig } from '../../../../src/config/load.js';
import { createApi } from '../../../../src/cli/context.js';
import { startSimulator, type Simulator } from '../../../simulator/index.js';
import { RecordingPlugin } from '../../../helpers/recording-plugin.js';

/**
 * Shrink guard: a pull that empties the applied set, or shrinks it by more than
 * `shrink_guard_ratio`, is held back one cycle and applied when the next pull
 * agrees. The pure rule, then whole cycles against the simulator.
 */

describe('checkShrink', () => {
  const NOW = 1_800_000_000;

  it('a shrink by more than the ratio, not to zero, is held one cycle, then applied when the next pull agrees', () => {
    const held = checkShrink(100, 40, 0.5, undefined, NOW);
    expect(held.allow).toBe(false);
    expect(held.pending).toEqual({ at: NOW, size: 40 });
    expect(held.message).toMatch(/from 100 to 40 entries \(60%, limit 50%\)/);
    const next = checkShrink(100, 40, 0.5, held.pending, NOW + 900);
    expect(next.allow).toBe(true);
    expect(next.pending).toBeUndefined();
    expect(next.message).toMatch(/two pulls agree/);
  });

  it('a shrink within the ratio goes through and clears a pending hold', () => {
    expect(checkShrink(100, 60, 0.5, undefined, NOW)).toEqual({ allow: true, pending: undefined });
    expect(checkShrink(100, 50, 0.5, undefined, NOW)).toEqual({ allow: true, pending: undefined }); // exactly the ratio: allowed
    expect(checkShrink(100, 49, 0.5, undefined, NOW).allow).toBe(false);
    // A held pull followed by one that does not shrink: the hold is dropped, not kept for later.
    expect(checkShrink(100, 100, 0.5, { at: NOW, size: 40 }, NOW)).toEqual({ allow: true, pending: undefined });
    expect(checkShrink(100, 150, 0.5, { at: NOW, size: 40 }, NOW)).toEqual({ allow: true, pending: undefined });
  });

  it('the ratio setting decides', () => {
    expect(checkShrink(100, 70, 0.2, undefined, NOW).allow).toBe(false); // 30% > 20%
    expect(checkShrink(100, 70, 0.5, undefined, NOW).allow).toBe(true);
    expect(checkShrink(100, 99, 0, undefined, NOW).allow).toBe(false); // 0: any shrink held
    expect(checkShrink(100, 1, 1, undefined, NOW).allow).toBe(true); // 1: only emptying is held
    expect(checkShrink(100, 0, 1, undefined, NOW).allow).toBe(false);
  });

  it('emptying the set is always held, whatever the ratio; an empty set never holds anything', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e6 }), fc.double({ min: 0, max: 1, noNaN: true }), (prev, ratio) => {
        expect(checkShrink(prev, 0, ratio, undefined, NOW).allow).toBe(false);
        expect(checkShrink(0, 0, ratio, undefined, NOW).allow).toBe(true);
      }),
    );
  });

  it('holds exactly when the shrink exceeds the ratio or empties the set', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 0, max: 20_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (prev, next, ratio) => {
        const v = checkShrink(prev, next, ratio, undefined, NOW);
        expect(v.allow).toBe(!(next === 0 || (prev - next) / prev > ratio));
        expect(v.pending === undefined).toBe(v.allow);
        // Whatever was held, the next agreeing pull goes through.
        if (!v.allow) expect(checkShrink(prev, next, ratio, v.pending, NOW + 1).allow).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('shrink guard in whole cycles (simulator, recording plugin)', () => {
  const logger = pino({ level: 'silent' });
  let sim: Simulator;
  const dirs: string[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ indicators: 3000, seed: 51, agentConfig: { maximum_rules: '100', score_threshold: '1', sync_time: '5', running: 'true' } });
  });
  afterAll(async () => {
    await sim?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** An agent with its own state dir; `cycle()` runs one whole sync with the server's maximum_rules set first. */
  function agent(extra: Record<string, unknown> = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-guard-'));
    dirs.push(dir);
    const config = parseConfig(
      JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: 'state', retries: 0, full_resync_hours: 0, ...extra }),
      join(dir, 'config.json'),
    );
    const state = new StateStore(config.state_dir, logger);
    const plugin = new RecordingPlugin();
    return {
      plugin,
      state,
      async cycle(maximumRules: number, force = false): Promise<CycleOutcome & { report: { code: number; blacklist: string[] } }> {
        sim.setAgentConfig(sim.agid, { maximum_rules: String(maximumRules) });
        const api = createApi(config, logger);
        try {
          const outcome = await runCycle({ config, api, state, logger, force }, plugin);
          expect(outcome.reported).toBe(true);
          return { ...outcome, report: sim.reports.at(-1)!.body as { code: number; blacklist: string[] } };
        } finally {
          await api.client.close();
        }
      },
      applied: () => state.loadApplied('dry-run')?.entries.length,
    };
  }

  it('default ratio 0.5: a 60% shrink is held one cycle (code 50), applied when the next pull agrees', async () => {
    const a = agent();
    const first = await a.cycle(100);
    expect(first.record.code).toBe(0);
    expect(a.plugin.applies.at(-1)).toHaveLength(100);

    const held = await a.cycle(40);
    expect(held.error?.name).toBe('GuardError');
    expect(held.record).toMatchObject({ ok: true, code: 50, applied: 100 });
    expect(held.report.code).toBe(50);
    expect(held.report.blacklist).toHaveLength(100);
    expect(a.plugin.applies).toHaveLength(1); // nothing applied
    expect(a.applied()).toBe(100);

    const agreed = await a.cycle(40);
    expect(agreed.record.code).toBe(0);
    expect(a.plugin.applies).toHaveLength(2);
    expect(a.plugin.applies.at(-1)).toHaveLength(40);
    expect(agreed.report.blacklist).toHaveLength(40);
    expect(a.applied()).toBe(40);
  });

  it('default ratio 0.5: a 40% shrink is applied at once', async () => {
    const a = agent();
    await a.cycle(100);
    const r = await a.cycle(60);
    expect(r.record.code).toBe(0);
    expect(a.plugin.applies.at(-1)).toHaveLength(60);
  });

  it('shrink_guard_ratio 0.3: the same 40% shrink is held, then applied when the next pull agrees', async () => {
    const a = agent({ shrink_guard_ratio: 0.3 });
    await a.cycle(100);
    const held = await a.cycle(60);
    expect(held.record.code).toBe(50);
    expect(a.plugin.applies).toHaveLength(1);
    const agreed = await a.cycle(60);
    expect(agreed.record.code).toBe(0);
    expect(a.plugin.applies.at(-1)).toHaveLength(60);
  });

  it('a held shrink that the next pull does not confirm is dropped: a later shrink is held again', async () => {
    const a = agent();
    await a.cycle(100);
    expect((await a.cycle(30)).record.code).toBe(50);
    expect((await a.cycle(100)).record.code).toBe(0); // the feed is back
    expect(a.state.small.pendingShrink).toBeUndefined();
    expect((await a.cycle(30)).record.code).toBe(50); // held again, not applied on the stale hold
    expect(a.applied()).toBe(100);
  });

  it('sync --force skips the guard', async () => {
    const a = agent();
    await a.cycle(100);
    const r = await a.cycle(10, true);
    expect(r.record.code).toBe(0);
    expect(a.plugin.applies.at(-1)).toHaveLength(10);
  });
});
