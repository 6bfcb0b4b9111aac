// A new host's first config: a required key left out is said with where its value comes from and
// the file to put it in, and `agents list` (what the message points to for agid) runs without one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 10, seed: 2 });
});
afterAll(async () => {
  await sim?.close();
});

describe('a missing required key', () => {
  it.each([
    ['agid', { base_url: 'http://192.0.2.1:1/api/v1', token: 't' }, /agents list.*agent page|agent page.*agents list/],
    ['base_url', { agid: 'a1', token: 't' }, /\/api\/v1.*agent page/],
    ['token', { agid: 'a1', base_url: 'http://192.0.2.1:1/api/v1' }, /agent page.*token_file/],
  ])('%s: names the key, where its value comes from, and the file; exit 2', async (key, values, from) => {
    const { path } = writeConfig(values);
    const r = await runCli(['check-config', '--config', path]);
    expect(r.exitCode).toBe(2);
    const line = r.stderr.split('\n').find((l) => l.trim().startsWith(`${key}: `));
    expect(line, r.stderr).toBeDefined();
    expect(line).toMatch(new RegExp(`^\\s*${key}: missing: `));
    expect(line).toMatch(from);
    expect(line).toContain(`set it in ${path}`);
    expect(r.stderr).not.toMatch(/received undefined/);
  });

  it('agents list runs on a config without agid (base_url and token are enough), and lists the record to copy', async () => {
    const { path } = writeConfig({ base_url: sim.url, token: sim.token });
    const r = await runCli(['agents', 'list', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { agents: { agid: string }[] }).agents.map((a) => a.agid)).toContain(sim.agid);
    // The commands that act for this agent still need it.
    const sync = await runCli(['sync', '--config', path]);
    expect(sync.exitCode).toBe(2);
    expect(sync.stderr).toMatch(/agid: missing: /);
  });
});
