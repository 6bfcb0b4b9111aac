// Soak: many fast sync cycles in one process against the simulator (dry-run
// backend), printing RSS and heap at the start and end. Not a CI test.
//   npx tsx scripts/soak.ts [--cycles 1000] [--indicators 5000]
// As the agent runs (its shebang's Node flags), with readings after a full GC:
//   node_modules/.bin/node --expose-gc --max-semi-space-size=4 --import tsx scripts/soak.ts
// SOAK_TRACE=1 adds a line every 100 cycles. `newSpaceMB` is V8's young generation as
// committed: without the flag it grows towards 3 x 64 MB over the first hundreds of
// cycles, which shows as RSS growth with a flat heap (not a leak).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics } from 'node:v8';
import pino from 'pino';
import { request } from 'undici';
import { parseConfig } from '../src/config/load.js';
import { createApi, openPlugin, openState } from '../src/cli/context.js';
import { runCycle } from '../src/agent/cycle/cycle.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '1000' }, indicators: { type: 'string', default: '5000' } } });
const cycles = Number(values.cycles);
// The simulator runs in its own process, so its memory (it logs every report) is not counted here.
const child = spawn(join(import.meta.dirname, '../node_modules/.bin/tsx'), ['test/simulator/main.ts', '--port', '0', '--indicators', values.indicators, '--seed', '3'], {
  cwd: join(import.meta.dirname, '..'),
  stdio: ['ignore', 'pipe', 'inherit'],
});
const sim = JSON.parse(await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve))) as { url: string; token: string; agid: string };
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
  const mb = (n: number) => +(n / 1048576).toFixed(1);
  const newSpace = getHeapSpaceStatistics().find((sp) => sp.space_name === 'new_space')?.space_size ?? 0;
  return { rssMB: mb(m.rss), heapMB: mb(m.heapUsed), externalMB: mb(m.external), arrayBuffersMB: mb(m.arrayBuffers), newSpaceMB: mb(newSpace) };
};

let failures = 0;
let start = mem();
const t0 = Date.now();
for (let i = 0; i < cycles; i++) {
  // Some churn each cycle, so incremental pulls and deltas have work to do.
  await request(`${sim.url}/ips`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ip: `198.18.${(i >> 8) & 255}.${i & 255}`, confidence: 0.9 }),
  }).then((r) => r.body.dump());
  const out = await runCycle({ config, api, state, logger }, plugin);
  if (!out.record.ok) failures++;
  if (i === 9) start = mem(); // after warm-up (JIT, caches, sockets)
  if (process.env.SOAK_TRACE && i % 100 === 99) console.error(JSON.stringify({ cycle: i + 1, ...mem() }));
}
const end = mem();
console.log(JSON.stringify({ cycles, indicators: Number(values.indicators), failures, ms: Date.now() - t0, afterWarmup: start, end, gcExposed: Boolean(gc) }));
await api.client.close();
child.kill('SIGTERM');
