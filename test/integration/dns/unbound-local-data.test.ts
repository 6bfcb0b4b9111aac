import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * An administrator's own `local-data` in unbound.conf for a name the agent blocks (or one below
 * it). At its start unbound puts that data inside the agent's zone; removing the zone
 * (`local_zones_remove`, by a later cycle or `flush`) would take the data with it until unbound
 * restarts. The agent leaves such names alone: it gives the zone up with the data put back, and
 * never zones a name that carries someone else's data.
 */

const RECORDS: Record<string, string> = {
  'evil.example': '198.18.0.10',
  'www.evil.example': '198.18.0.11',
  'other.example': '198.18.0.12',
};
const ADMIN_A = 'www.evil.example. 300 IN A 10.9.9.9';
const ADMIN_TXT = 'evil.example. 300 IN TXT "kept by the admin"';

type SyncJson = { ok: boolean; dns?: { applied: number; result?: { foreign: string[] } } };

describe.each(['nxdomain', 'sinkhole'] as const)('unbound: an administrator\'s local-data under a blocked name (%s)', (action) => {
  let sim: Simulator;
  let lab: ResolverLab;
  let cfg: { path: string; dir: string };
  let pristine: string;
  // Below a sinkhole (a `redirect` zone) unbound refuses to start with data anywhere but the top
  // of the zone, so there the administrator's data sits at the blocked name itself.
  const adminLine = action === 'nxdomain' ? ADMIN_A : ADMIN_TXT;
  const adminSees = async () => (action === 'nxdomain' ? (await lab.answers('www.evil.example')).join() : (await lab.ns.exec('dig', ['+short', '+time=2', '+tries=1', '@127.0.0.1', 'evil.example', 'TXT'])).trim());
  const adminValue = action === 'nxdomain' ? '10.9.9.9' : '"kept by the admin"';
  const blocked = async (name: string) => (action === 'nxdomain' ? (await lab.status(name)) === 'NXDOMAIN' : (await lab.answers(name)).join() === '198.18.0.99');
  const sync = async () => {
    const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
    return { ...r, json: r.stdout ? (JSON.parse(r.stdout) as SyncJson) : undefined };
  };
  /** The administrator edits unbound.conf and restarts unbound. */
  const adminConf = async (withData: boolean) => {
    writeFileSync(lab.conf, withData ? pristine.replace('server:\n', `server:\n  local-data: '${adminLine}'\n`) : pristine);
    await lab.stop();
    await lab.start();
  };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 30, agentConfig: { score_threshold: '4' } });
    sim.upsertUrl('http://evil.example/login', { score: 9, ts: sim.clock.now() });
    sim.upsertUrl('http://other.example/x', { score: 9, ts: sim.clock.now() });
    lab = await createResolverLab({ records: RECORDS });
    pristine = readFileSync(lab.conf, 'utf8');
    cfg = writeConfig({
      agid: sim.agid,
      base_url: sim.url,
      token: sim.token,
      plugin: 'nftables',
      netns: lab.ns.name,
      retries: 0,
      url_feed: true,
      dns_plugin: 'unbound',
      unbound_control: lab.control,
      unbound_conf_file: lab.includeFile,
      ...(action === 'sinkhole' ? { dns_action: 'sinkhole', sinkhole_address: '198.18.0.99' } : {}),
    });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('flush keeps the administrator\'s data that a restart put inside the agent\'s zone', async () => {
    const first = await sync();
    expect(first.exitCode, first.stderr).toBe(0);
    expect(await blocked('evil.example')).toBe(true);
    // Its own sinkhole data is not someone else's: a second cycle keeps every block.
    expect((await sync()).json?.dns?.result?.foreign).toEqual([]);
    await adminConf(true);
    const r = await runCli(['flush', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await adminSees()).toBe(adminValue);
    expect(await blocked('other.example')).toBe(false);
  });

  it('a name carrying someone else\'s local data is not zoned by the next cycle (reported as foreign)', async () => {
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.json?.dns?.result?.foreign).toEqual(['evil.example']);
    expect(await blocked('evil.example')).toBe(false);
    expect(await adminSees()).toBe(adminValue);
    expect(await blocked('other.example')).toBe(true);
    expect(readFileSync(lab.includeFile, 'utf8')).not.toContain('"evil.example."');
  });

  it('a name left alone is logged once while it stays so, counted in status, and named with its record in explain', async () => {
    // The cycle above logged it; the list has not changed since.
    const again = await sync();
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stderr).not.toContain('left alone');
    const status = await runCli(['status', '--json', '--config', cfg.path]);
    expect((JSON.parse(status.stdout) as { dns: { left_alone: number } }).dns.left_alone).toBe(1);
    const text = await runCli(['status', '--config', cfg.path]);
    expect(text.stdout).toMatch(/names left alone +1: someone else's data/);
    const held = `local-data "${adminLine}" in unbound.conf`;
    const e = await runCli(['explain', 'www.evil.example', '--config', cfg.path]);
    expect(e.stdout).toContain(`left alone: ${held}`);
    const j = JSON.parse((await runCli(['explain', 'evil.example', '--json', '--config', cfg.path])).stdout) as { blocked: boolean; resolver: { left_alone: string } };
    expect(j).toMatchObject({ blocked: false, resolver: { left_alone: held } });
  });

  it('a zone of the agent\'s that someone else\'s data moved into (a restart) is given up, the data kept', async () => {
    await adminConf(false);
    const freed = await sync();
    expect(freed.exitCode).toBe(0);
    expect(freed.stderr).toContain('no name is left alone at the resolver any more');
    expect(await blocked('evil.example')).toBe(true);
    await adminConf(true);
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(`1 names are left alone: someone else's data at unbound holds them, so the agent does not block them: evil.example (local-data`);
    expect(r.json?.dns?.result?.foreign).toEqual(['evil.example']);
    expect(await blocked('evil.example')).toBe(false);
    expect(await adminSees()).toBe(adminValue);
    expect(await blocked('other.example')).toBe(true);
    expect(readFileSync(lab.includeFile, 'utf8')).not.toContain('"evil.example."');
  });
});
