// Cycle duration and peak RSS of `sync --once` against each hostile server (simulator fault
// modes, and a proxy that never accepts). Not a test: timings belong here.
//   npx tsx scripts/bench/standalone/hostile.ts [--indicators 20000] [--only NAME]
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../../../test/simulator/index.js';
import type { FaultMode, FaultOptions } from '../../../test/simulator/faults.js';
import { agentNodeFlags } from '../sync.js';

const { values } = parseArgs({ options: { indicators: { type: 'string', default: '20000' }, only: { type: 'string' } } });
const n = Number(values.indicators);
const sim = await startSimulator({ indicators: n, seed: 5, agentConfig: { maximum_rules: '10000', score_threshold: '3', sync_time: '15', running: 'true' } });
const cli = join(import.meta.dirname, '../../../dist/cli.js');

/** A proxy address whose connect hangs: a socket that never accepts, its backlog filled. */
async function blackHole(): Promise<{ port: number; close: () => void }> {
  const p = spawn('python3', ['-c', 'import socket,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(3600)'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((r) => p.stdout!.once('data', (d: Buffer) => r(Number(d.toString().trim()))));
  const fill = [0, 1, 2].map(() => connect(port, '127.0.0.1').on('error', () => undefined));
  return { port, close: () => (fill.forEach((s) => s.destroy()), p.kill('SIGKILL')) };
}

interface Scenario {
  name: string;
  fault?: [FaultMode, FaultOptions];
  config?: Record<string, unknown>;
  proxy?: boolean;
}
const scenarios: Scenario[] = [
  { name: 'baseline (no fault)' },
  { name: 'trickle E7, 1 B/0.5 s (defaults: 60 s deadline, 3 retries)', fault: ['trickle', { routes: ['GET /feedback'] }] },
  { name: 'trickle feed pages, 1 B/0.5 s (defaults)', fault: ['trickle', { routes: ['GET /ips'], filter: 0 }] },
  { name: 'trickle feed pages, no request deadline, cycle deadline 60 s', fault: ['trickle', { routes: ['GET /ips'], filter: 0 }], config: { request_deadline_ms: 3_600_000, min_bytes_per_second: 0, cycle_deadline_seconds: 60 } },
  { name: 'one item ten years ahead', fault: ['futureTs', { filter: 0 }] },
  { name: 'endless paging (default cap: 1,000,000 items)', fault: ['endless', { filter: 0 }] },
  { name: 'escapes in a 500 message (defaults: 3 retries)', fault: ['http500', { message: 'x\u001b]0;t\u0007\r\nforged' }] },
  { name: 'proxy never accepts (defaults: 10 s connect, 3 retries)', proxy: true },
];

const rows: { scenario: string; exit: number; code: number | null; seconds: number; rssMb: number }[] = [];
for (const s of scenarios) {
  if (values.only && !s.name.includes(values.only)) continue;
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-hostile-'));
  const hole = s.proxy ? await blackHole() : undefined;
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: 'state', ...(hole ? { proxy: `http://127.0.0.1:${hole.port}` } : {}), ...s.config }), { mode: 0o600 });
  sim.setFault(s.fault?.[0] ?? null, s.fault?.[1]);
  const t0 = process.hrtime.bigint();
  const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile('/usr/bin/time', ['-f', 'RSS_KB=%M', process.execPath, ...agentNodeFlags(), cli, 'sync', '--once', '--json', '--config', config], { maxBuffer: 1 << 30, env: { ...process.env, WCF_LOG_LEVEL: 'warn' } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  hole?.close();
  sim.setFault(null);
  const rss = Number(/RSS_KB=(\d+)/.exec(r.stderr)?.[1] ?? 0) / 1024;
  let code: number | null = null;
  try {
    code = (JSON.parse(r.stdout) as { code: number }).code;
  } catch {
    /* no JSON */
  }
  rows.push({ scenario: s.name, exit: r.code, code, seconds: Math.round(seconds * 10) / 10, rssMb: Math.round(rss) });
  console.error(JSON.stringify(rows.at(-1)));
}
console.log('| hostile server | exit | code | cycle (s) | peak RSS (MB) |\n|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.scenario} | ${r.exit} | ${r.code ?? '-'} | ${r.seconds} | ${r.rssMb} |`);
await sim.close();
