/**
 * Benchmark of the threat-intelligence API simulator:
 *   npx tsx scripts/bench/standalone/simulator.ts [--indicators 100000] [--runs 5] [--limit 1000] [--full no]
 * Starts the simulator in-process, pulls the whole feed in pages over loopback (the
 * contract's ts-cursor walk) `runs` times and reports the median server time (time
 * spent inside the request handler, summed) and wall time per full pull.
 */
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { startSimulator } from '../../../test/simulator/index.js';

const { values } = parseArgs({
  options: {
    indicators: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '5' },
    limit: { type: 'string', default: '1000' },
    full: { type: 'string', default: 'no' },
  },
});
const N = Number(values.indicators);
const RUNS = Number(values.runs);
const LIMIT = Number(values.limit);

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const t0 = performance.now();
const sim = await startSimulator({ indicators: N, seed: 1 });
const startupMs = performance.now() - t0;
const dispatcher = new Agent({ connections: 1 });
const headers = { authorization: `Bearer ${sim.token}` };

async function pullAll(): Promise<{ items: number; pages: number; bytes: number }> {
  let ts = 0;
  let items = 0;
  let pages = 0;
  let bytes = 0;
  const seen = new Set<string>();
  for (;;) {
    const r = await request(`${sim.url}/ips?limit=${LIMIT}&ts=${ts}&full=${values.full}`, { headers, dispatcher });
    const text = await r.body.text();
    bytes += text.length;
    pages++;
    const page = JSON.parse(text) as { body: { ip: string; ts: number }[] };
    for (const it of page.body) seen.add(it.ip);
    items += page.body.length;
    if (page.body.length < LIMIT) break;
    const first = page.body[0]!.ts;
    const last = page.body[page.body.length - 1]!.ts;
    ts = first === last ? last + 1 : last;
  }
  return { items: seen.size, pages, bytes };
}

await pullAll(); // warm-up (JIT, connection)
const server: number[] = [];
const wall: number[] = [];
let last = { items: 0, pages: 0, bytes: 0 };
for (let k = 0; k < RUNS; k++) {
  sim.resetStats();
  const w0 = performance.now();
  last = await pullAll();
  wall.push(performance.now() - w0);
  server.push(sim.stats().handlerMs);
}
await dispatcher.close();
await sim.close();

const mem = process.memoryUsage();
console.log(
  JSON.stringify(
    {
      indicators: N,
      limit: LIMIT,
      full: values.full,
      runs: RUNS,
      startupMs: Math.round(startupMs),
      pagesPerPull: last.pages,
      uniqueIpsPerPull: last.items,
      mbPerPull: +(last.bytes / 1e6).toFixed(1),
      serverMsMedian: +median(server).toFixed(1),
      wallMsMedian: +median(wall).toFixed(1),
      serverMs: server.map((x) => +x.toFixed(1)),
      wallMs: wall.map((x) => +x.toFixed(1)),
      heapUsedMB: Math.round(mem.heapUsed / 2 ** 20),
      rssMB: Math.round(mem.rss / 2 ** 20),
    },
    null,
    2,
  ),
);
