// `plan --offline`: with the API down, the plan comes from what the last sync cached in state_dir.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
const dirs: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 17, agentConfig: { maximum_rules: '150', score_threshold: '4', sync_time: '5', running: 'true' } });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface PlanJson {
  generated_at: number;
  offline: { feed_as_of: number } | null;
  agent_record: string | null;
  settings: { maximum_rules: number; score_threshold: number };
  counts: { selected: number; manual: number };
  entries: { ip: string; reason: string; expires: number | null }[];
}

describe('plan --offline', () => {
  it('with the API down: exit 0, the cached feed and decisions, the settings in force; plain plan fails', async () => {
    const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, connect_timeout_ms: 500 });
    dirs.push(cfg.dir);
    const synced = await runCli(['sync', '--dry-run', '--config', cfg.path]);
    expect(synced.exitCode, synced.stderr).toBe(0);
    const applied = (JSON.parse(readFileSync(join(cfg.dir, 'state', 'applied-dry-run.json'), 'utf8')) as { ts: number; entries: { cidr: string; reason: string; expiresAt: number | null }[] });

    // The API goes away (nothing listens on port 9).
    const config = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(cfg.path, JSON.stringify({ ...config, base_url: 'http://127.0.0.1:9/api/v1' }));
    const online = await runCli(['plan', '--config', cfg.path]);
    expect(online.exitCode).toBe(3);

    const r = await runCli(['plan', '--offline', '--json', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as PlanJson;
    expect(plan.offline!.feed_as_of).toBe(applied.ts);
    expect(plan.agent_record).toBeNull();
    expect(plan.settings).toMatchObject({ maximum_rules: 150, score_threshold: 4 });
    expect(plan.counts.selected).toBe(150);
    // The same selection as the sync's, but for entries that may have crossed the threshold in between.
    const settled = (expires: number | null) => expires === null || expires - plan.generated_at > 60;
    const offline = new Set(plan.entries.map((e) => e.ip));
    const synced150 = new Set(applied.entries.map((e) => e.cidr));
    for (const e of plan.entries) if (settled(e.expires)) expect(synced150.has(e.ip), e.ip).toBe(true);
    for (const e of applied.entries) if (settled(e.expiresAt)) expect(offline.has(e.cidr), e.cidr).toBe(true);
    expect(plan.counts.manual).toBe(applied.entries.filter((e) => e.reason === 'manual').length);

    const table = await runCli(['plan', '--offline', '--limit', '3', '--config', cfg.path]);
    expect(table.exitCode, table.stderr).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^offline: planned from the feed cached at \d{4}-\d\d-\d\dT[\d:]+Z \(.*ago\); the API was not asked$/);
  });

  it('with nothing cached yet: exit 4 saying a sync writes the cache', async () => {
    const cfg = writeConfig({ agid: sim.agid, base_url: 'http://127.0.0.1:9/api/v1', token: 't' });
    dirs.push(cfg.dir);
    const r = await runCli(['plan', '--offline', '--config', cfg.path]);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/no cached feed in .*state to plan from offline: a successful sync \(or the daemon's cycle\) writes it/);
  });
});
