import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
let path: string;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 200, seed: 5 });
  path = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token }).path;
});
afterAll(async () => {
  await sim?.close();
});

describe('agents list', () => {
  it('prints a table with the reported state and the stored configuration', async () => {
    // One real sync so the record carries a hostname, plugin, entries and ts.
    expect((await runCli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    const r = await runCli(['agents', 'list', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^agid\s+hostname\s+plugin\s+code\s+entries\s+last sync\s+running\s+max rules\s+threshold\s+sync min\s+version$/m);
    const row = r.stdout.split('\n').find((l) => l.startsWith(`${sim.agid} `))!;
    expect(row).toMatch(/ dry-run\s+0\s+\d+\s+\d{4}-\d\d-\d\dT\S+Z \(\S+ ago\)\s+true\s+20000\s+4\s+5\s+0\.1\.0$/);
    expect(Number(row.split(/\s+/)[4])).toBeGreaterThan(0);
  });

  it('server text (agid, stored values) reaches the terminal escaped: no escape sequence, no forged line, no reordering', async () => {
    const evil = 'ev\x1b]0;pwned\x07il\x1b[2J\r\nforged \u202eetc\x9b31m';
    sim.setAgentConfig(evil, { version: '\x1b[31mred\u202e', running: 'true\r\nforged row' });
    try {
      const r = await runCli(['agents', 'list', '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
      // Only printable text and line ends: every control and bidi character came out as an escape.
      expect(r.stdout).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
      const rows = r.stdout.split('\n').filter((l) => l.includes('forged'));
      expect(rows, 'one row for the record, its CR/LF escaped').toHaveLength(1);
      expect(rows[0]).toContain('ev\\x1b]0;pwned\\x07il\\x1b[2J\\r\\nforged \\u202eetc\\x9b31m');
      expect(rows[0]).toContain('\\x1b[31mred\\u202e');
      expect(r.stdout.split('\n').some((l) => l.startsWith('forged'))).toBe(false);
    } finally {
      sim.deleteAgent(evil);
    }
  });

  it('--json prints {agents} as the API returns them', async () => {
    const r = await runCli(['agents', 'list', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { agents: { agid: string; hostanme: string }[] };
    expect(out.agents.map((a) => a.agid)).toContain(sim.agid);
  });
});

describe('agents configure / delete round trip', () => {
  const agid = 'agent-rt';

  it('configure stores only the given fields as strings; E7 then shows numbers', async () => {
    const mark = sim.requests.length;
    const r = await runCli(['agents', 'configure', '--agid', agid, '--maximum-rules', '500', '--score-threshold', '6', '--sync-time', '10', '--running', 'off', '--version', '0.2.0', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/stored for agent agent-rt: maximum_rules=500 score_threshold=6 sync_time=10 running=false version=0\.2\.0/);
    const post = sim.requests.slice(mark).find((q) => q.method === 'POST')!;
    expect(post.path).toMatch(/\/feedback\/config$/);
    expect(post.query.agid).toBe(agid);
    expect(sim.getAgent(agid)!.config).toMatchObject({ maximum_rules: 500, score_threshold: 6, sync_time: 10, running: 'false', version: '0.2.0' });

    const again = await runCli(['agents', 'configure', '--agid', agid, '--running', 'enabled', '--config', path]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(sim.getAgent(agid)!.config).toMatchObject({ maximum_rules: 500, running: 'true' });
    const list = JSON.parse((await runCli(['agents', 'list', '--json', '--config', path])).stdout) as { agents: { agid: string; config: Record<string, unknown> }[] };
    expect(list.agents.find((a) => a.agid === agid)!.config).toMatchObject({ maximum_rules: 500, score_threshold: 6, sync_time: 10 });
  });

  it('delete without --yes and no TTY on stdin: exit 2 with a hint, nothing deleted', async () => {
    const mark = sim.requests.length;
    const r = await runCli(['agents', 'delete', '--agid', agid, '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/not a terminal.*--yes/);
    expect(sim.getAgent(agid)).toBeDefined();
    expect(sim.requests.slice(mark).some((q) => q.method === 'DELETE')).toBe(false);
  });

  it('delete --yes removes the record, reminds that the agent keeps working; list lacks it', async () => {
    const r = await runCli(['agents', 'delete', '--agid', agid, '--yes', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/deleted the record of agent agent-rt/);
    expect(r.stdout).toMatch(/does not stop the agent/);
    expect(r.stdout).toMatch(/--running off/);
    expect(sim.getAgent(agid)).toBeUndefined();
    const list = await runCli(['agents', 'list', '--config', path]);
    expect(list.stdout).not.toMatch(/^agent-rt /m);
    // Deleting it again: the API has no such record, exit 3.
    expect((await runCli(['agents', 'delete', '--agid', agid, '--yes', '--config', path])).exitCode).toBe(3);
  });
});

describe('agents: bad values exit 2 naming the flag, before anything is sent', () => {
  it.each([
    [['--maximum-rules', '0'], /--maximum-rules: expected a whole number from 1 to 2000000/],
    [['--maximum-rules', '2000001'], /--maximum-rules: /],
    [['--score-threshold', 'high'], /--score-threshold: /],
    [['--sync-time', '10081'], /--sync-time: .*10080/],
    [['--running', 'maybe'], /--running: expected on or off/],
    [['--version', 'x y'], /--version: /],
    [[], /at least one of --maximum-rules/],
  ])('configure %j', async (args, message) => {
    const mark = sim.requests.length;
    const r = await runCli(['agents', 'configure', '--agid', 'agent-x', ...(args as string[]), '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(message as RegExp);
    expect(sim.requests.length).toBe(mark);
  });

  it('missing --agid', async () => {
    const r = await runCli(['agents', 'configure', '--sync-time', '5', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/--agid/);
  });

  it('wrong token: exit 3', async () => {
    const bad = writeConfig({ agid: sim.agid, base_url: sim.url, token: 'wrong' }).path;
    const r = await runCli(['agents', 'list', '--config', bad]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/403/);
  });
});
