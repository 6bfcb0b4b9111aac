// Periodic full re-pull (contract section 1): incremental from the saved cursor inside the
// `full_resync_hours` window, a full pull from ts=0 once the last full pull is older than that.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';

let sim: Simulator;
const dirs: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    indicators: 600,
    seed: 9,
    agentConfig: { maximum_rules: '300', score_threshold: '3', sync_time: '5', running: 'true' },
  });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function config(extra: Record<string, unknown> = {}) {
  const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, ...extra });
  dirs.push(c.dir);
  return c;
}

/** One `sync --once --json`; returns its full_pull flag and the ts of every score-feed (filter 0) request it made. */
async function sync(path: string): Promise<{ fullPull: boolean; feedTs: number[] }> {
  const mark = sim.requests.length;
  const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
  expect(r.exitCode, r.stderr).toBe(0);
  const feedTs = sim.requests
    .slice(mark)
    .filter((q) => q.method === 'GET' && q.path.endsWith('/ips') && q.query.filter === '0')
    .map((q) => Number(q.query.ts));
  return { fullPull: (JSON.parse(r.stdout) as { full_pull: boolean }).full_pull, feedTs };
}

function editState(dir: string, edit: (s: Record<string, number>) => void): Record<string, number> {
  const file = join(dir, 'state', 'state.json');
  const s = JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
  edit(s);
  writeFileSync(file, JSON.stringify(s));
  return s;
}

describe('periodic full re-pull', () => {
  it('incremental inside the window, full (ts=0) once the last full pull is older than full_resync_hours', async () => {
    const hours = 2;
    const { path, dir } = config({ full_resync_hours: hours });

    const first = await sync(path);
    expect(first.fullPull).toBe(true);
    expect(first.feedTs[0]).toBe(0);

    sim.upsertIndicator({ ip: '198.18.20.1', score: 9 });
    const second = await sync(path);
    expect(second.fullPull).toBe(false);
    expect(second.feedTs.length).toBeGreaterThan(0);
    expect(second.feedTs.every((ts) => ts > 0)).toBe(true);

    // Just inside the window (one minute left): still incremental.
    const now = Math.floor(Date.now() / 1000);
    editState(dir, (s) => void (s.lastFullPullAt = now - hours * 3600 + 60));
    const third = await sync(path);
    expect(third.fullPull).toBe(false);
    expect(third.feedTs.every((ts) => ts > 0)).toBe(true);

    // The last full pull is now older than the window: the next sync pulls everything again.
    editState(dir, (s) => void (s.lastFullPullAt = now - hours * 3600 - 60));
    const fourth = await sync(path);
    expect(fourth.fullPull).toBe(true);
    expect(fourth.feedTs[0]).toBe(0);
    const after = JSON.parse(readFileSync(join(dir, 'state', 'state.json'), 'utf8')) as { lastFullPullAt: number };
    expect(after.lastFullPullAt).toBeGreaterThanOrEqual(now);

    // ... and the window starts again from that pull.
    const fifth = await sync(path);
    expect(fifth.fullPull).toBe(false);
    expect(fifth.feedTs.every((ts) => ts > 0)).toBe(true);
  });

  it('full_resync_hours 0: every sync is a full pull', async () => {
    const { path } = config({ full_resync_hours: 0 });
    for (let i = 0; i < 2; i++) {
      const s = await sync(path);
      expect(s.fullPull).toBe(true);
      expect(s.feedTs[0]).toBe(0);
    }
  });
});
