import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { appliedIps, runCli, writeConfig } from '../helpers/cli.js';
import { expectedPlan } from '../helpers/expected-plan.js';

let sim: Simulator;
const THRESHOLD = 4;
const MAX = 400;

beforeAll(async () => {
  sim = await startSimulator({
    indicators: 5000,
    seed: 7,
    agentConfig: { maximum_rules: String(MAX), score_threshold: String(THRESHOLD), sync_time: '5', running: 'true', version: '0.1.0' },
  });
});
afterAll(async () => {
  await sim?.close();
});

function config(extra: Record<string, unknown> = {}) {
  return writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, ...extra });
}

interface PlanJson {
  generated_at: number;
  scoring: string;
  settings: { maximum_rules: number; score_threshold: number; running: boolean };
  counts: { selected: number; manual: number; score: number; skipped: Record<string, number> };
  entries: { ip: string; reason: string; score: number | null; expires: number | null }[];
}

describe('plan --json', () => {
  it('lists exactly what an independent computation of the contract selects', async () => {
    const { path } = config();
    const r = await runCli(['plan', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as PlanJson;
    expect(plan.settings).toMatchObject({ maximum_rules: MAX, score_threshold: THRESHOLD });
    const expected = expectedPlan(sim.indicators(), { now: plan.generated_at, threshold: THRESHOLD, maximumRules: MAX, minPrefix: 8 });
    expect(plan.entries.map((e) => [e.ip, e.reason])).toEqual(expected.map((e) => [e.ip, e.reason]));
    for (let i = 0; i < expected.length; i++) {
      // Rounded to 4 significant digits.
      const want = expected[i]!.score!;
      if (expected[i]!.reason === 'score') expect(Math.abs(plan.entries[i]!.score! - want)).toBeLessThanOrEqual(5e-4 * want);
    }
    for (const e of plan.entries) {
      if (e.score !== null) expect(e.score).toBe(Number(e.score.toPrecision(4)));
      if (e.expires !== null) expect(Number.isInteger(e.expires)).toBe(true);
    }
    expect(plan.counts.manual).toBeGreaterThan(0);
    expect(plan.counts.score).toBeGreaterThan(0);
    // Score entries expire when their decayed score crosses the threshold; manual ones never.
    for (const e of plan.entries) {
      if (e.reason === 'manual') expect(e.expires).toBeNull();
      else expect(e.expires!).toBeGreaterThan(plan.generated_at);
    }
  });

  it('touches neither the firewall nor the state dir', async () => {
    const { path, dir } = config();
    // A fresh install: plan creates no state dir at all.
    let r = await runCli(['plan', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(join(dir, 'state'))).toBe(false);
    // After a sync: plan changes nothing in it, byte for byte.
    expect((await runCli(['sync', '--once', '--config', path])).exitCode).toBe(0);
    const files = () => Object.fromEntries(readdirSync(join(dir, 'state')).sort().map((f) => [f, readFileSync(join(dir, 'state', f)).toString('base64')]));
    const before = files();
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['dry-run.ipset', 'state.json', 'feed-cache.bin', 'applied-dry-run.json']));
    r = await runCli(['plan', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(files()).toEqual(before);
  });

  it('prints a readable table without --json', async () => {
    const { path } = config();
    const r = await runCli(['plan', '--config', path, '--limit', '5']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^reason\s+ip\s+score now\s+expires in/m);
    expect(r.stdout).toMatch(/entries \(\d+ manual, \d+ score\) of \d+ feed indicators/);
  });
});

describe('sync without --once, and flush twice', () => {
  it('`sync` alone runs one cycle and exits, as `sync --once` does', async () => {
    const { path, dir } = config();
    const before = sim.reports.length;
    const r = await runCli(['sync', '--dry-run', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, code: 0, plugin: 'dry-run' });
    expect(sim.reports.length).toBe(before + 1);
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(true);
  });

  it('a second flush says nothing was there', async () => {
    const { path, dir } = config();
    expect((await runCli(['sync', '--dry-run', '--config', path])).exitCode).toBe(0);
    const first = await runCli(['flush', '--dry-run', '--config', path]);
    expect(first.exitCode, first.stderr).toBe(0);
    // After the change history's log line for the entries it removed.
    expect(first.stderr.split('\n').at(-1)).toBe('flushed: removed the dry-run objects owned by wcf-agent');
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);
    const second = await runCli(['flush', '--dry-run', '--config', path]);
    expect(second.exitCode, second.stderr).toBe(0);
    expect(second.stderr).toBe('nothing to flush: no dry-run objects owned by wcf-agent were there');
  });
});

describe('sync --once --dry-run', () => {
  it('renders the selected set, reports it to the API, and status shows it', async () => {
    const { path, dir } = config();
    const before = sim.reports.length;
    const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; applied: number; selected: number; plugin: string; reported: boolean; by_reason: { manual: number; score: number } };
    expect(out).toMatchObject({ ok: true, plugin: 'dry-run', reported: true });
    expect(out.applied).toBe(out.selected);
    // The outcome, not the plan: counts, changes and times (the entries are plan --json's).
    expect(out).not.toHaveProperty('plan');
    expect(out).toMatchObject({ changes: { added: out.applied, removed: 0 }, feed: { indicators: expect.any(Number), whitelisted: expect.any(Number) }, code: 0 });
    expect(out.by_reason.manual + out.by_reason.score).toBe(out.applied);
    const applied = appliedIps(join(dir, 'state'));
    expect(applied.length).toBe(out.applied);

    const rules = readFileSync(join(dir, 'state', 'dry-run.ipset'), 'utf8');
    for (const ip of applied) expect(rules).toContain(` ${ip}`);

    expect(sim.reports.length).toBe(before + 1);
    const report = sim.reports.at(-1)!.body as Record<string, unknown>;
    expect(report).toMatchObject({ agid: sim.agid, plugin: 'dry-run', code: 0, maximum_rules: MAX, score_threshold: THRESHOLD, sync_time: '5', version: '0.1.0' });
    expect(typeof report.hostanme).toBe('string');
    expect([...(report.blacklist as string[])].sort()).toEqual(applied);

    const st = await runCli(['status', '--json', '--config', path]);
    expect(st.exitCode, st.stderr).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject({ ok: true, code: 0, plugin: 'dry-run', applied: out.applied, sources: { maximum_rules: 'server' } });
  });

  it('pulls incrementally from the saved cursor on the next cycle', async () => {
    const { path, dir } = config();
    expect((await runCli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    const mark = sim.requests.length;
    sim.upsertIndicator({ ip: '198.18.7.7', score: 9.5 });
    const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const feedCalls = sim.requests.slice(mark).filter((q) => q.path.endsWith('/ips') && q.query.filter === '0');
    expect(feedCalls.length).toBeGreaterThan(0);
    expect(Number(feedCalls[0]!.query.ts)).toBeGreaterThan(0);
    const out = JSON.parse(r.stdout) as { full_pull: boolean };
    expect(out.full_pull).toBe(false);
    expect(appliedIps(join(dir, 'state'))).toContain('198.18.7.7');
  });

  it('a whitelist decision removes an entry on the next cycle', async () => {
    const { path, dir } = config();
    sim.upsertIndicator({ ip: '198.18.9.9', score: 9.9 });
    expect((await runCli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    expect(appliedIps(join(dir, 'state'))).toContain('198.18.9.9');
    sim.setDecision('198.18.9.9', 0);
    expect((await runCli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    expect(appliedIps(join(dir, 'state'))).not.toContain('198.18.9.9');
    sim.setDecision('198.18.9.9', -1);
  });

  it('running=off removes the rules but keeps syncing and reporting', async () => {
    const { path, dir } = config();
    expect((await runCli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    sim.setAgentConfig(sim.agid, { running: 'off' });
    try {
      const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, applied: 0, running: false, reported: true });
      expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);
      expect((sim.reports.at(-1)!.body as { blacklist: string[] }).blacklist).toEqual([]);
    } finally {
      sim.setAgentConfig(sim.agid, { running: 'on' });
    }
  });

  it('an invalid stored value keeps the previous one and reports a non-zero code', async () => {
    const { path } = config();
    sim.setAgentConfig(sim.agid, { maximum_rules: 'lots' });
    try {
      const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, code: 12 });
      expect(r.stderr).toMatch(/config\.maximum_rules/);
      expect((sim.reports.at(-1)!.body as { code: number }).code).toBe(12);
    } finally {
      sim.setAgentConfig(sim.agid, { maximum_rules: String(MAX) });
    }
  });

  it('rejects a formula that is code, uses the built-in one, and runs nothing', async () => {
    const marker = '/tmp/pwned';
    rmSync(marker, { force: true });
    const { path } = config();
    sim.setFault('formulaCode', { formula: 'exec' });
    try {
      const r = await runCli(['plan', '--json', '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ scoring: 'builtin' });
      expect(r.stderr).toMatch(/formula rejected/);
      expect(existsSync(marker)).toBe(false);
    } finally {
      sim.setFault(null);
    }
  });
});

describe('failures', () => {
  it('bad config: exit 2 and one line per problem naming the field', async () => {
    const { path } = config({ maximun_rules: 5, min_prefix: 99 });
    const r = await runCli(['plan', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/maximun_rules: unknown key/);
    expect(r.stderr).toMatch(/min_prefix: /);
  });

  it('bad usage: exit 2', async () => {
    expect((await runCli(['plan', '--bogus'])).exitCode).toBe(2);
    expect((await runCli(['sync'])).exitCode).toBe(2);
  });

  it('API unreachable: exit 3, nothing applied, status shows the code', async () => {
    const { path, dir } = config({ base_url: 'http://127.0.0.1:9/api/v1', connect_timeout_ms: 500 });
    const r = await runCli(['sync', '--once', '--dry-run', '--config', path]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/ECONNREFUSED/);
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);
    const st = JSON.parse((await runCli(['status', '--json', '--config', path])).stdout) as { code: number; ok: boolean };
    expect(st).toMatchObject({ ok: false, code: 20 });
  });

  it('wrong token: exit 3 with a message about the token', async () => {
    const { path } = config({ token: 'wrong' });
    const r = await runCli(['plan', '--config', path]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/403/);
    expect(r.stderr).toMatch(/token/);
  });

  it('a failed pull keeps the previously rendered set', async () => {
    const { path, dir } = config();
    expect((await runCli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    const before = readFileSync(join(dir, 'state', 'dry-run.ipset'), 'utf8');
    sim.setFault('truncated');
    try {
      const r = await runCli(['sync', '--once', '--dry-run', '--config', path]);
      expect(r.exitCode).toBe(3);
    } finally {
      sim.setFault(null);
    }
    expect(readFileSync(join(dir, 'state', 'dry-run.ipset'), 'utf8')).toBe(before);
  });
});

describe('help and version', () => {
  it.each(['run', 'sync', 'plan', 'status', 'flush'])('%s --help describes the command', async (cmd) => {
    const r = await runCli([cmd, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/--config/);
  });
  it('no --help text speaks of endpoint numbers (E7...): each says what the command does', async () => {
    for (const args of [['--help'], ['agents', 'list', '--help'], ['agents', 'configure', '--help'], ['agents', 'delete', '--help'], ['report', '--help'], ['sync', '--help']]) {
      const r = await runCli(args);
      expect(r.exitCode).toBe(0);
      expect(r.stdout, args.join(' ')).not.toMatch(/\bE\d\b/);
    }
  });

  it('--version prints the version', async () => {
    const r = await runCli(['--version']);
    expect(r.stdout.trim()).toMatch(new RegExp(`^wcf-agent ${(JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string }).version} \\(commit `));
  });
});
