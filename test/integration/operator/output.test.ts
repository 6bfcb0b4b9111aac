import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

/** `status` and `plan` as an operator reads them on a terminal, against the simulator over loopback. */

let sim: Simulator;
let path: string;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 400, seed: 21, agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' } });
  path = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token }).path;
});
afterAll(async () => {
  await sim?.close();
});

const LABELS = [
  'agent',
  'daemon',
  'last sync',
  'last success',
  'next sync',
  'plugin',
  'firewall',
  'entries applied',
  'enforcing',
  'local overrides',
  'maximum_rules',
  'score_threshold',
  'sync_time',
  'last full pull',
  'repairs',
];

/** The label column (up to the first run of 2+ spaces) and where each value starts. */
function rows(stdout: string) {
  const lines = stdout.trimEnd().split('\n');
  return lines.map((l) => {
    const m = /^(\S+(?: \S+)*)( {2,})(\S.*)$/.exec(l);
    if (!m) throw new Error(`not a label/value line: ${JSON.stringify(l)}`);
    return { label: m[1]!, value: m[3]!, column: m[1]!.length + m[2]!.length };
  });
}

describe('status (human output)', () => {
  it('before any sync: every label, "never", values in one column', async () => {
    const fresh = writeConfig({ agid: 'nobody-yet', base_url: sim.url, token: sim.token }).path;
    const r = await runCli(['status', '--config', fresh]);
    expect(r.exitCode, r.stderr).toBe(0);
    const rs = rows(r.stdout);
    expect(rs.map((x) => x.label)).toEqual(LABELS);
    expect(new Set(rs.map((x) => x.column))).toEqual(new Set(['score_threshold'.length + 2]));
    const v = Object.fromEntries(rs.map((x) => [x.label, x.value]));
    expect(v).toMatchObject({
      agent: 'nobody-yet',
      daemon: 'not running',
      'last sync': 'never',
      plugin: '-',
      'entries applied': '0',
      enforcing: 'no (dry run: nothing enforced)',
      'local overrides': '0 allow, 0 block',
      maximum_rules: '10000 (local default)',
    });
  });

  it('after a sync: the cycle, its counts and the server settings, aligned, matching --json', async () => {
    const sync = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
    expect(sync.exitCode, sync.stderr).toBe(0);
    const r = await runCli(['status', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const rs = rows(r.stdout);
    expect(rs.map((x) => x.label)).toEqual(LABELS);
    expect(new Set(rs.map((x) => x.column))).toEqual(new Set(['score_threshold'.length + 2]));
    const v = Object.fromEntries(rs.map((x) => [x.label, x.value]));

    const j = JSON.parse((await runCli(['status', '--json', '--config', path])).stdout) as {
      applied: number;
      by_reason: { manual: number; score: number };
      last_sync: number;
    };
    expect(j.applied).toBeGreaterThan(0);
    const iso = new Date(j.last_sync * 1000).toISOString().replace('.000Z', 'Z');
    expect(v.agent).toBe(sim.agid);
    expect(v['last sync']).toMatch(new RegExp(`^${iso} \\(\\d+s ago\\), ok$`));
    expect(v['last success']).toBe(iso);
    expect(v.plugin).toBe('dry-run');
    expect(v['entries applied']).toBe(`${j.applied} (${j.by_reason.manual} manual, ${j.by_reason.score} score)`);
    // The dry-run backend writes a file: nothing is enforced, whatever the last sync says.
    expect(v.enforcing).toBe('no (dry run: nothing enforced)');
    expect(v.firewall).toBe('dry-run (rules rendered to a file only)');
    expect(v.daemon).toBe('not running');
    expect(v.maximum_rules).toBe('300 (server)');
    expect(v.score_threshold).toBe('4 (server)');
    expect(v.sync_time).toBe('5 min (server)');
    expect(v['last full pull']).toBe(iso);
  });

  it('after a failed sync: FAILED with the reported code and the reason', async () => {
    const bad = writeConfig({ agid: sim.agid, base_url: sim.url, token: 'wrong' }).path;
    expect((await runCli(['sync', '--once', '--dry-run', '--config', bad])).exitCode).toBe(3);
    const v = Object.fromEntries(rows((await runCli(['status', '--config', bad])).stdout).map((x) => [x.label, x.value]));
    expect(v['last sync']).toMatch(/\(\d+s ago\), FAILED code \d+: .*403/);
    expect(v['last success']).toBe('-');
  });
});

describe('plan --limit', () => {
  it.each(['abc', '0', '-5', '2.5', ''])('%j: exit 2 naming --limit, nothing sent to the API', async (value) => {
    const mark = sim.requests.length;
    const r = await runCli(['plan', `--limit=${value}`, '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--limit: expected a whole number/);
    expect(r.stderr).toContain(JSON.stringify(value));
    expect(r.stdout).toBe('');
    expect(sim.requests.length).toBe(mark);
  });

  it('N shows exactly N rows and says how many more there are', async () => {
    const all = JSON.parse((await runCli(['plan', '--json', '--config', path])).stdout) as { entries: unknown[] };
    expect(all.entries.length).toBeGreaterThan(3);
    const r = await runCli(['plan', '--limit', '3', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^reason\s+ip\s+score now\s+expires in$/);
    expect(lines[1]).toMatch(/^-+( +-+){3}$/);
    expect(lines.slice(2, 5).every((l) => /^(manual|score)\s/.test(l))).toBe(true);
    expect(lines[5]).toBe(`... and ${all.entries.length - 3} more (use --json or --limit)`);
  });
});
