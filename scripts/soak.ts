// Soak: many fast sync cycles in one process against the simulator (dry-run
// backend), printing RSS and heap at the start and end. Not a CI test.
//   npx tsx scripts/soak.ts [--cycles 1000] [--indicators 5000]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { startSimulator } from '../test/simulator/index.js';
import { parseConfig } from '../src/config/load.js';
import { createApi, openPlugin, openState } from '../src/cli/context.js';
import { runCycle } from '../src/agent/cycle.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '1000' }, indicators: { type: 'string', default: '5000' } } });
const cycles = Number(values.cycles);
const sim = await startSimulator({ indicators: Number(values.indicators), seed: 3, agentConfig: { maximum_rules: '2000', score_threshold: '3' } });
const dir = mkdtempSync(join(tmpdir(), 'wcf-soak-'));
const config = parseConfig(
  JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: 'state', full_resync_hours: 1 }),
  join(dir, 'config.json'),
);
const logger = pino({ level: 'silent' });
const api = createApi(config, logger);
const state = openState(config, logger);
const plugin = await openPlugin(config, logger, true);
const gc = (globalThis as { gc?: () => void }).gc;
const mem = () => {
  gc?.();
  const m = process.memoryUsage();
  return { rssMB: +(m.rss / 1048576).toFixed(1), heapMB: +(m.heapUsed / 1048576).toFixed(1) };
};

let failures = 0;
let start = mem();
const t0 = Date.now();
for (let i = 0; i < cycles; i++) {
  // Some churn each cycle, so incremental pulls and deltas have work to do.
  sim.upsertIndicator({ ip: `198.18.${(i >> 8) & 255}.${i & 255}`, score: 8 });
  const out = await runCycle({ config, api, state, logger }, plugin);
  if (!out.record.ok) failures++;
  if (i === 9) start = mem(); // after warm-up (JIT, caches, sockets)
}
const end = mem();
console.log(JSON.stringify({ cycles, indicators: Number(values.indicators), failures, ms: Date.now() - t0, afterWarmup: start, end, gcExposed: Boolean(gc) }));
await api.client.close();
await sim.close();
