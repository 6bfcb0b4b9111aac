import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { checkClock, type Clocks } from '../../../../src/agent/cycle/clock-steps.js';
import { runBoundedCycle } from '../../../../src/agent/cycle/bounded-cycle.js';
import { StateStore } from '../../../../src/agent/state/store.js';
import { parseConfig } from '../../../../src/config/load.js';
import { createApi } from '../../../../src/cli/context.js';
import { startSimulator } from '../../../simulator/index.js';
import { RecordingPlugin } from '../../../helpers/recording-plugin.js';

/** Injectable clocks: the wall clock is stepped, the monotonic one runs on. */
function clocks(wall: number, mono: number, boot = 'boot-a'): Clocks {
  return { wall: () => wall, mono: () => mono, boot: () => boot };
}
const T = 1_795_000_000;

describe('checkClock', () => {
  it('detects a step forward and back against the monotonic clock; ordinary progress is no step', () => {
    const s = { clock: { wall: T, mono: 1000, boot: 'boot-a' } };
    expect(checkClock(s, clocks(T + 900, 1900)).step).toBeUndefined();
    expect(checkClock(s, clocks(T + 365 * 86_400 + 900, 1900)).step).toBeCloseTo(365 * 86_400, 3);
    expect(checkClock(s, clocks(T - 3600 + 900, 1900)).step).toBeCloseTo(-3600, 3);
    // After a reboot the monotonic clocks are not comparable: unknown, not a step.
    expect(checkClock(s, clocks(T + 10 * 86_400, 5, 'boot-b')).step).toBeUndefined();
  });

  it('stored instants in the future are treated as unknown (a full pull becomes due again)', () => {
    const c = checkClock({ lastFullPullAt: T + 86_400, cursor: T + 86_400, lastSuccessAt: T + 86_400, pendingShrink: { at: T + 86_400, size: 3 } }, clocks(T, 10));
    expect(c.cleared.sort()).toEqual(['cursor', 'lastFullPullAt', 'lastSuccessAt', 'pendingShrink.at']);
    expect(c.patch).toMatchObject({ lastFullPullAt: undefined, cursor: undefined, lastSuccessAt: undefined, pendingShrink: { at: T, size: 3 } });
    expect(checkClock({ lastFullPullAt: T - 60, cursor: T - 60 }, clocks(T, 10)).cleared).toEqual([]);
  });
});

describe('a cycle across clock steps (simulator, recording plugin)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-clock-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('forward step: the shrink guard still holds back an emptied set; back again: full resyncs resume', async () => {
    const sim = await startSimulator({ indicators: 400, seed: 3, agentConfig: { maximum_rules: '50', score_threshold: '2', sync_time: '5', running: 'true', version: '0.1.0' } });
    try {
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
      const config = parseConfig(JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, state_dir: dir, plugin: 'dry-run', retries: 0 }), join(dir, 'config.json'));
      const state = new StateStore(dir, logger);
      const api = createApi(config, logger);
      const plugin = new RecordingPlugin();
      const now = Math.floor(Date.now() / 1000);
      const first = await runBoundedCycle({ config, api, state, logger, now: () => now }, plugin, clocks(now, 1000));
      expect(first.record.applied).toBeGreaterThan(0);
      const applied = first.record.applied;

      // The wall clock jumps a year ahead: every score has decayed, the selection is empty.
      const later = now + 365 * 86_400;
      const jumped = await runBoundedCycle({ config, api, state, logger, now: () => later }, plugin, clocks(later, 1060));
      expect(lines.join('')).toMatch(/system clock was stepped forward/);
      expect(jumped.record.code).toBe(50); // held back, not applied
      expect(plugin.applies).toHaveLength(1);
      expect(await plugin.list()).toHaveLength(applied);
      expect(state.small.lastFullPullAt).toBeGreaterThan(now + 300 * 86_400);

      // The clock comes back: the lastFullPullAt of the jump lies in the future and is forgotten.
      const back = await runBoundedCycle({ config, api, state, logger, now: () => now + 120 }, plugin, clocks(now + 120, 1120));
      expect(lines.join('')).toMatch(/stored instants lie in the future.*lastFullPullAt/);
      expect(back.record.fullPull).toBe(true);
      expect(state.small.lastFullPullAt).toBe(now + 120);
      await api.client.close();
    } finally {
      await sim.close();
    }
  });
});
