// A cycle told to stop (SIGTERM) after its pull but before its apply applies nothing: at a million
// entries the selection between the two takes tens of seconds, and the daemon must not begin an
// apply it was told to skip. The pulled feed is still kept (cache and cursor), so the next start
// does not pull it again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCycle } from '../../../../src/agent/cycle/cycle.js';
import { StateStore } from '../../../../src/agent/state/store.js';
import { createApi } from '../../../../src/cli/context.js';
import { parseConfig } from '../../../../src/config/load.js';
import { RecordingPlugin } from '../../../helpers/recording-plugin.js';
import { startSimulator, type Simulator } from '../../../simulator/index.js';

let sim: Simulator;
let dir: string;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 9, agentConfig: { maximum_rules: '2000', score_threshold: '3', sync_time: '5', running: 'true' } });
  dir = mkdtempSync(join(tmpdir(), 'wcf-stop-apply-'));
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('runCycle stopped between its pull and its apply', () => {
  it('applies nothing, says why, and keeps the pulled feed for the next start', async () => {
    const logger = pino({ level: 'silent' });
    const config = parseConfig(JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state') }), join(dir, 'config.json'));
    const api = createApi(config, logger);
    const state = new StateStore(config.state_dir, logger);
    // The pull is complete once the cycle keeps what it learnt (the settings): SIGTERM lands then.
    const update = state.update.bind(state);
    state.update = (patch) => {
      update(patch);
      if ('settings' in patch) api.client.abort();
    };
    const plugin = new RecordingPlugin();
    try {
      const out = await runCycle({ config, api, state, logger }, plugin);
      expect(out.record.ok).toBe(false);
      expect(out.error?.message).toBe('the agent is stopping: nothing applied, the pulled feed is kept for the next start');
      expect(plugin.applies).toEqual([]);
      expect(out.plan?.selection.entries.length).toBeGreaterThan(0); // there was something to apply
      expect(state.small.cursor).toBeGreaterThan(0);
      expect(state.loadApplied('dry-run')).toBeUndefined();
    } finally {
      await api.client.close();
    }
  });
});
