/**
 * Figures for the URL feed (not a test: timings belong here): a full and an incremental
 * `sync --once` of the built CLI with `url_feed` on (dry-run backends, so only the agent's
 * own work is measured) against the simulator serving N URLs, wall time and the agent's
 * peak RSS (GNU time %M), beside the same sync with `url_feed` off.
 *
 *   npm run build && npx tsx scripts/bench/standalone/urls.ts [--urls 100000,1000000] [--indicators 1000]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../../../test/simulator/index.js';
import { agentNodeFlags } from '../sync.js';

const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');

const { values } = parseArgs({ options: { urls: { type: 'string', default: '100000,1000000' }, indicators: { type: 'string', default: '1000' } } });
const sizes = values.urls!.split(',').map(Number);

async function timed(config: string): Promise<{ wallMs: number; rssMB: number; out: string }> {
  const rss = join(tmpdir(), `wcf-bench-urls-${process.pid}`);
  const t0 = performance.now();
  const { code, out, err } = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const c = spawn('/usr/bin/time', ['-f', '%M', '-o', rss, process.execPath, ...agentNodeFlags(), CLI, 'sync', '--once', '--config', config], {
      env: { ...process.env, WCF_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let o = '';
    let e = '';
    c.stdout.on('data', (d: Buffer) => (o += d.toString()));
    c.stderr.on('data', (d: Buffer) => (e = (e + d.toString()).slice(-4000)));
    c.once('close', (code) => resolve({ code, out: o, err: e }));
  });
  const wallMs = performance.now() - t0;
  if (code !== 0) throw new Error(`sync exited ${code}: ${err}`);
  const kb = Number(readFileSync(rss, 'utf8').trim().split('\n').pop());
  rmSync(rss, { force: true });
  return { wallMs, rssMB: (kb * 1024) / 1e6, out: err.split('\n').filter((l) => l.startsWith('sync ok')).join(' ') || out };
}

for (const n of sizes) {
  const sim = await startSimulator({ indicators: Number(values.indicators), urls: n, seed: 1, agentConfig: { score_threshold: '3' } });
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-urls-'));
  const base = { agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state'), retries: 0 };
  writeFileSync(join(dir, 'on.json'), JSON.stringify({ ...base, url_feed: true }));
  writeFileSync(join(dir, 'off.json'), JSON.stringify({ ...base, state_dir: join(dir, 'state-off') }));
  try {
    const off = await timed(join(dir, 'off.json'));
    const full = await timed(join(dir, 'on.json'));
    const inc = await timed(join(dir, 'on.json'));
    const cache = readFileSync(join(dir, 'state', 'url-cache.bin')).length;
    console.log(
      `urls ${n}: full sync ${(full.wallMs / 1000).toFixed(2)} s, peak RSS ${full.rssMB.toFixed(0)} MB | incremental ${(inc.wallMs / 1000).toFixed(2)} s, ${inc.rssMB.toFixed(0)} MB | ` +
        `url_feed off ${(off.wallMs / 1000).toFixed(2)} s, ${off.rssMB.toFixed(0)} MB | url-cache.bin ${(cache / 1e6).toFixed(1)} MB\n  ${full.out}`,
    );
  } finally {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
