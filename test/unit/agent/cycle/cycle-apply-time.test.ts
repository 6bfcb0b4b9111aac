// The apply's clock: kernel timeouts count from the moment of the apply, not from the start of the
// cycle, and entries whose expiry passed during the pull are not applied. (A pull of a million
// indicators takes seconds; counted from the cycle's start, every timeout came out that much too
// long, and the next cycle saw every one of them as changed.)
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
  sim = await startSimulator({ indicators: 3000, seed: 5, agentConfig: { maximum_rules: '3000', score_threshold: '3', sync_time: '5', running: 'true' } });
  dir = mkdtempSync(join(tmpdir(), 'wcf-apply-time-'));
});
afterAll(async () => {
  await sim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('runCycle applies on the clock of the apply', () => {
  it('timeouts count from the apply; entries that expired during the pull are left out', async () => {
    const logger = pino({ level: 'silent' });
    const config = parseConfig(JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state') }), join(dir, 'config.json'));
    const start = Math.floor(Date.now() / 1000);
    const delay = 1800; // the pull "took" half an hour: the first reading is the cycle's start, later ones the apply's
    let calls = 0;
    const now = () => (calls++ === 0 ? start : start + delay);
    const plugin = new RecordingPlugin();
    const api = createApi(config, logger);
    try {
      const out = await runCycle({ config, api, state: new StateStore(config.state_dir, logger), logger, now }, plugin);
      expect(out.record.ok, out.record.message).toBe(true);
      const selected = out.plan!.selection.entries;
      const expired = selected.filter((e) => e.expiresAt !== null && e.expiresAt <= start + delay);
      expect(expired.length).toBeGreaterThan(0); // the data has entries that expire within the half hour
      const applied = plugin.applies[0]!;
      // Sized for the server's maximum_rules (3000), not config.json's default (10,000).
      expect(plugin.applyOptions[0]).toEqual({ capacity: 3000, appliedBefore: false });
      expect(applied).toHaveLength(selected.length - expired.length);
      expect(out.record.applied).toBe(applied.length);
      const byCidr = new Map(selected.map((e) => [e.cidr.text, e]));
      for (const e of applied) {
        const sel = byCidr.get(e.cidr.text)!;
        if (sel.expiresAt === null) expect(e.timeoutSeconds).toBeUndefined();
        else expect(e.timeoutSeconds).toBe(Math.max(1, Math.floor(sel.expiresAt - (start + delay))));
      }
    } finally {
      await api.client.close();
    }
  });
});
