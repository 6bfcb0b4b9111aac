import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/** A dry run never touches the resolver; changing dns_plugin removes what the previous backend applied. */
describe('dns_plugin changes and dry runs', () => {
  let sim: Simulator;
  let lab: ResolverLab;
  let cfg: { path: string; dir: string };
  const zones = async () => (await lab.localZones()).filter((z) => z.includes('evil-site.example'));

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 10, urls: 0, seed: 8, agentConfig: { score_threshold: '4' } });
    sim.upsertUrl('https://evil-site.example/a', { score: 9 });
    lab = await createResolverLab({ records: { 'evil-site.example': '198.18.0.10', 'good.example': '198.18.0.12' }, rpz: true });
    cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, url_feed: true,
      unbound_control: lab.control, unbound_conf_file: lab.includeFile, rpz_file: lab.rpzFile, rpz_reload: [...lab.control, 'auth_zone_reload', 'rpz.wcf'],
    });
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('sync --dry-run leaves unbound as it is', async () => {
    expect((await runCli(['sync', '--once', '--config', cfg.path])).exitCode).toBe(0);
    expect(await zones()).toEqual(['evil-site.example. always_nxdomain']);
    sim.setFault('empty', { routes: ['GET /urls'] });
    const r = await runCli(['sync', '--once', '--dry-run', '--force', '--config', cfg.path]);
    sim.setFault(null);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await zones()).toEqual(['evil-site.example. always_nxdomain']);
  });

  it('switching to rpz removes the unbound zones and enforces through the zone file instead', async () => {
    const c = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(cfg.path, JSON.stringify({ ...c, dns_plugin: 'rpz' }));
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await zones()).toEqual([]);
    expect(readFileSync(lab.includeFile, 'utf8')).not.toContain('local-zone');
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.answers('good.example')).toEqual(['198.18.0.12']);
  });
});
