import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startSimulator } from './index.js';
import { authHeaders, getJson, type FeedPageWire } from './test-helpers.js';

const NOW = 1_795_000_000;

describe('scale and lifecycle', () => {
  // Its memory is a figure for the benchmark, not a bound here (an absolute heap size depends on
  // the machine and the collector's timing).
  it('1,000,000 indicators: serves a page from the end, a crowded timestamp and the filter pages', async () => {
    const sim = await startSimulator({ indicators: 1_000_000, seed: 3, now: NOW });
    try {
      const big = sim.data.sameTsRuns.find((r) => r.count > 1000)!;
      expect(big).toBeDefined();
      const tail = await getJson<FeedPageWire>(sim, `/ips?ts=${NOW - 600}&full=yes`);
      expect(tail.status).toBe(200);
      expect(tail.body.body.length).toBeGreaterThan(0);
      expect(tail.body.body.length).toBeLessThanOrEqual(1000);
      expect(tail.body.body.every((x) => x.ts >= NOW - 600 && x.ts < NOW)).toBe(true);
      const end = await getJson<FeedPageWire>(sim, `/ips?ts=${NOW}`);
      expect(end.body.body).toEqual([]);
      const runPage = await getJson<FeedPageWire>(sim, `/ips?ts=${big.ts}`);
      expect(runPage.body.body.every((x) => x.ts === big.ts)).toBe(true);
      for (const f of [1, 2, 3]) {
        const r = await getJson<FeedPageWire>(sim, `/ips?filter=${f}&ts=${NOW - 86_400}`);
        expect(r.body.body.length).toBeGreaterThan(0);
      }
      sim.upsertIndicator({ ip: tail.body.body[0]!.ip, score: 7 });
      const moved = await getJson<FeedPageWire>(sim, `/ips?ts=${NOW}`);
      expect(moved.body.body.map((x) => x.ip)).toEqual([tail.body.body[0]!.ip]);
    } finally {
      await sim.close();
    }
  });

  it('close() ends promptly with a slow request pending', async () => {
    const sim = await startSimulator({ indicators: 10 });
    sim.setFault('slow', { delayMs: 600_000 });
    const pending = fetch(`${sim.url}/ips`, { headers: authHeaders(sim) });
    const outcome = pending.then(
      (r) => `status ${r.status}`,
      () => 'error',
    );
    // wait until the server has the request (it is recorded before the delay)
    while (sim.requests.length === 0) await new Promise((r) => setImmediate(r));
    await sim.close();
    expect(await outcome).toBe('error');
  });

  it('the CLI prints one JSON line and exits 0 on SIGTERM', async () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main, '--port', '0', '--indicators', '50', '--seed', '4', '--token', 't0k', '--agid', 'cli-agent'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const info = JSON.parse(line) as { url: string; token: string; agid: string };
      expect(info).toMatchObject({ token: 't0k', agid: 'cli-agent' });
      expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1$/);
      const r = await fetch(`${info.url}/ips?limit=5`, { headers: { authorization: 't0k' } });
      expect(((await r.json()) as FeedPageWire).body).toHaveLength(5);
      child.kill('SIGTERM');
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
