import { appendFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';

/**
 * The change history through the CLI, each command its own process, on the configured dry-run
 * backends (firewall and resolver): names, local overrides without a daemon, flush, a torn
 * history file, the journald line, and bad input.
 */

interface HistoryJson {
  target: string;
  events: { ts: number; entry: string; change: string; reason: string; score: number | null; rank: number | null; cause: string }[];
  history: { from: number | null };
}

let sim: Simulator;
const dirs: string[] = [];
beforeAll(async () => {
  sim = await startSimulator({ indicators: 50, urls: 50, seed: 7, agentConfig: { maximum_rules: '200', score_threshold: '4', sync_time: '600', running: 'true' } });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function config(extra: Record<string, unknown> = {}) {
  const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, ...extra });
  dirs.push(cfg.dir);
  return cfg;
}
async function ok(args: string[], path: string) {
  const r = await runCli([...args, '--config', path]);
  expect(r.exitCode, r.stderr).toBe(0);
  return r;
}
const history = async (target: string, path: string) => JSON.parse((await ok(['history', target, '--json'], path)).stdout) as HistoryJson;
const changes = (h: HistoryJson) => h.events.map((e) => `${e.entry} ${e.change} (${e.reason}) ${e.cause}`);
const after = (ts: number) => waitFor(() => Math.floor(Date.now() / 1000) > ts, `the clock past ${ts}`);

describe('history', () => {
  it('names at the resolver: added for its score, removed once whitelisted; a name below it lists the parent that covered it', async () => {
    const { path } = config({ url_feed: true, dns_plugin: 'dry-run' });
    sim.upsertUrl('https://evil-history.example/a', { score: 9, ts: sim.clock.now() });
    // Names that stay: the one that leaves is never most of the set (the shrink guard would hold it back).
    for (const n of [1, 2, 3, 4]) sim.upsertUrl(`https://steady${n}-history.example/`, { score: 9, ts: sim.clock.now() });
    await ok(['sync', '--once'], path);
    const h1 = await history('evil-history.example', path);
    expect(changes(h1)).toEqual(['evil-history.example added (score) cycle']);
    expect(h1.events[0]!.rank).toBeGreaterThanOrEqual(1);
    await after(h1.events[0]!.ts);
    sim.decideUrl('https://evil-history.example/a', 0); // whitelisted
    await ok(['sync', '--once'], path);
    const h2 = await history('login.evil-history.example', path);
    expect(changes(h2)).toEqual(['evil-history.example added (score) cycle', 'evil-history.example removed (whitelisted) cycle']);
    const at = JSON.parse((await ok(['explain', 'login.evil-history.example', '--at', String(h1.events[0]!.ts), '--json'], path)).stdout) as { blocked: boolean; by: { entry: string } };
    expect(at).toMatchObject({ blocked: true, by: { entry: 'evil-history.example' } });
  });

  it('local overrides without a daemon: a local block added, then ended, each recorded with the cause override', async () => {
    const { path } = config();
    await ok(['sync', '--once'], path);
    await ok(['block', '198.51.100.200'], path);
    const { events } = await history('198.51.100.200', path);
    await after(events[0]!.ts);
    await ok(['overrides', 'remove', '198.51.100.200'], path);
    expect(changes(await history('198.51.100.0/24', path))).toEqual(['198.51.100.200 added (local_block) override', '198.51.100.200 removed (local_block_ended) override']);
  });

  it('flush: every entry removed (flushed); a network lists what lay inside it', async () => {
    const { path } = config();
    sim.setDecision('192.0.2.55', 1);
    await ok(['sync', '--once'], path);
    const added = await history('192.0.2.55', path);
    await after(added.events[0]!.ts);
    await ok(['flush'], path);
    const h = await history('192.0.2.0/24', path);
    expect(changes(h)).toEqual(['192.0.2.55 added (manual) cycle', '192.0.2.55 removed (flushed) flush']);
    sim.setDecision('192.0.2.55', -1);
  });

  it('a torn history file (a crash mid-write) fails nothing: the next sync and history work, old and new changes read', async () => {
    const { path, dir } = config();
    sim.setDecision('192.0.2.66', 1);
    await ok(['sync', '--once'], path);
    const state = join(dir, 'state');
    const file = readdirSync(state).filter((f) => /^history-\d+\.bin$/.test(f)).sort().at(-1)!;
    appendFileSync(join(state, file), Buffer.from('WCFH\u0001torn'));
    const before = await history('192.0.2.66', path);
    await after(before.events[0]!.ts);
    sim.setDecision('192.0.2.66', 0);
    await ok(['sync', '--once'], path);
    expect(changes(await history('192.0.2.66', path))).toEqual(['192.0.2.66 added (manual) cycle', '192.0.2.66 removed (whitelisted) cycle']);
    sim.setDecision('192.0.2.66', -1);
  });

  it('one journald line per batch, the counts by reason as fields', async () => {
    const { path } = config({ log_format: 'journal' });
    const r = await ok(['sync', '--once'], path);
    expect(r.stderr).toMatch(/^<6>enforced addresses and networks changed \(cycle\): \d+ added, 0 removed, 0 updated history=addresses cause=cycle added=\d+ removed=0 updated=0 (\S+ )*added_score=\d+/m);
  });

  it('a dry run beside a real backend (--dry-run) is not recorded: the history is what the host enforces', async () => {
    const { path } = config({ plugin: 'nftables' });
    await ok(['sync', '--once', '--dry-run'], path);
    const h = await history('0.0.0.0/0', path);
    expect(h).toMatchObject({ events: [], history: { from: null } });
  });

  it('bad input: a usage error naming the argument or flag, exit 2', async () => {
    const { path } = config();
    for (const [args, what] of [
      [['history', '203.0.113.0/33'], 'TARGET:'],
      [['history', 'exa mple'], 'TARGET:'],
      [['history', '203.0.113.9', '--since', 'yesterday'], '--since:'],
      [['history', '203.0.113.9', '--since', '2000', '--until', '1000'], '--until:'],
      [['explain', '203.0.113.9', '--at', 'noon'], '--at:'],
      [['explain', '203.0.113.9', '--at', '1000', '--refresh'], '--refresh:'],
      [['explain', '203.0.113.9', '--at', String(Math.floor(Date.now() / 1000) + 86_400)], '--at:'],
      // Dates that do not exist, which Date.parse would roll over into the next month.
      [['history', '203.0.113.9', '--until', '2025-02-30'], '--until: "2025-02-30" is no date and time that exists (February 2025 has 28 days)'],
      [['history', '203.0.113.9', '--since', '2025-04-31T08:00Z'], '--since: "2025-04-31T08:00Z" is no date and time that exists (April 2025 has 30 days)'],
      [['explain', '203.0.113.9', '--at', '2025-02-29'], '--at: "2025-02-29" is no date and time that exists'],
      [['explain', 'evil.example', '--at', '2025-06-01T24:00Z'], '--at: "2025-06-01T24:00Z" is no date and time that exists (hours go from 00 to 23)'],
    ] as const) {
      const r = await runCli([...args, '--config', path]);
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(what);
    }
  });
});
