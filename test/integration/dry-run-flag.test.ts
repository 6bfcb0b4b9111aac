// `--dry-run` (and `plan`) must never run a firewall command, whatever `plugin` the config names:
// fake firewall tools first on PATH record every call; none may be recorded.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { appliedIps, runCli, writeConfig } from '../helpers/cli.js';
import { fakeFirewallTools, type FakeTools } from '../helpers/fake-tools.js';

let sim: Simulator;
let tools: FakeTools;
const dirs: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    indicators: 500,
    seed: 11,
    agentConfig: { maximum_rules: '200', score_threshold: '3', sync_time: '5', running: 'true' },
  });
  tools = fakeFirewallTools();
});
afterAll(async () => {
  await sim?.close();
  if (tools) rmSync(tools.dir, { recursive: true, force: true });
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
beforeEach(() => {
  rmSync(tools.log, { force: true });
});

function config(extra: Record<string, unknown>) {
  const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, ...extra });
  dirs.push(c.dir);
  return c;
}

const cli = (args: string[]) => runCli(args, { PATH: tools.path });

describe('the fake tools are really on the PATH the agent uses', () => {
  it.each([
    ['ipset', 'ipset '],
    ['nftables', 'nft '],
    ['iptables', 'iptables'],
  ])('without --dry-run, plugin %s runs the (fake) %s', async (plugin, tool) => {
    const { path } = config({ plugin });
    await cli(['sync', '--once', '--config', path]);
    expect(tools.calls().some((c) => c.startsWith(tool))).toBe(true);
  });
});

describe.each(['ipset', 'nftables', 'iptables', 'auto'])('plugin %s', (plugin) => {
  it('sync --once --dry-run runs no firewall command and writes the dry-run rules file', async () => {
    const { path, dir } = config({ plugin });
    const r = await cli(['sync', '--once', '--dry-run', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(tools.calls()).toEqual([]);
    const out = JSON.parse(r.stdout) as { ok: boolean; plugin: string; applied: number };
    expect(out).toMatchObject({ ok: true, plugin: 'dry-run' });
    expect(out.applied).toBeGreaterThan(0);
    const rules = readFileSync(join(dir, 'state', 'dry-run.ipset'), 'utf8');
    for (const ip of appliedIps(join(dir, 'state'))) expect(rules).toContain(` ${ip}`);
    expect((sim.reports.at(-1)!.body as { plugin: string }).plugin).toBe('dry-run');
  });

  it('plan runs no firewall command and writes no rules file', async () => {
    const { path, dir } = config({ plugin });
    for (const args of [['plan', '--json'], ['plan']]) {
      const r = await cli([...args, '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
    }
    expect(tools.calls()).toEqual([]);
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);
  });

  it('sync --once --dry-run leaves a previously used kernel backend alone', async () => {
    const { path, dir } = config({ plugin });
    // The state says ipset applied a set earlier (a real run before this dry run).
    expect((await cli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    writeFileSync(
      join(dir, 'state', 'applied-ipset.json'),
      JSON.stringify({ ts: Math.floor(Date.now() / 1000), plugin: 'ipset', entries: [{ cidr: '198.51.100.1/32', reason: 'manual', expiresAt: null }] }),
    );
    rmSync(tools.log, { force: true });
    const r = await cli(['sync', '--once', '--dry-run', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(tools.calls()).toEqual([]);
    expect(JSON.parse(r.stdout)).toMatchObject({ plugin: 'dry-run' });
  });

  it('flush --dry-run runs no firewall command: it removes the dry-run rules file only', async () => {
    const { path, dir } = config({ plugin });
    expect((await cli(['sync', '--once', '--dry-run', '--config', path])).exitCode).toBe(0);
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(true);
    const kernelRecord = join(dir, 'state', 'applied-nftables.json');
    const recorded = JSON.stringify({ ts: 1, plugin: 'nftables', entries: [{ cidr: '198.51.100.1', reason: 'manual', expiresAt: null }] });
    writeFileSync(kernelRecord, recorded);
    rmSync(tools.log, { force: true });
    const r = await cli(['flush', '--dry-run', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/removed the dry-run objects/);
    expect(tools.calls()).toEqual([]);
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);
    // What a real backend applied is not the dry run's to forget.
    expect(readFileSync(kernelRecord, 'utf8')).toBe(recorded);
  });
});
