import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { RECORDS, seedUrls } from './labs/rpz-suite.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/** The rpz plugin against a real unbound with an `rpz:` clause, in a namespace. */

const serial = (text: string) => Number(/SOA \S+ \S+ (\d+) /.exec(text)?.[1]);

describe('rpz plugin', () => {
  let sim: Simulator;
  let lab: ResolverLab;
  let cfg: { path: string; dir: string };
  const sync = (config = cfg.path) => runCli(['sync', '--once', '--config', config]);

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 4, agentConfig: { score_threshold: '4' } });
    seedUrls(sim);
    lab = await createResolverLab({ records: RECORDS, rpz: true });
    cfg = writeConfig({
      agid: sim.agid,
      base_url: sim.url,
      token: sim.token,
      plugin: 'nftables',
      netns: lab.ns.name,
      retries: 0,
      url_feed: true,
      dns_plugin: 'rpz',
      rpz_file: lab.rpzFile,
      rpz_reload: [...lab.control, 'auth_zone_reload', 'rpz.wcf'],
    });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('blocked names and their subdomains answer NXDOMAIN; protected and other names resolve', async () => {
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    for (const n of ['evil-site.example', 'www.evil-site.example', 'phish.co.uk']) expect(await lab.status(n), n).toBe('NXDOMAIN');
    for (const n of ['good.example', 'docs.google.com', 'co.uk', 'white.example']) expect(await lab.answers(n), n).toEqual([RECORDS[n]]);
    const zone = readFileSync(lab.rpzFile, 'utf8');
    expect(zone).toContain('evil-site.example CNAME .');
    expect(zone).toContain('*.evil-site.example CNAME .');
  });

  it('each write has a larger SOA serial; a restart of unbound keeps the blocks', async () => {
    const before = serial(readFileSync(lab.rpzFile, 'utf8'));
    sim.upsertUrl('https://good.example/now-bad', { score: 9 });
    expect((await sync()).exitCode).toBe(0);
    expect(serial(readFileSync(lab.rpzFile, 'utf8'))).toBeGreaterThan(before);
    expect(await lab.status('good.example')).toBe('NXDOMAIN');
    await lab.stop();
    await lab.start();
    expect(await lab.status('www.evil-site.example')).toBe('NXDOMAIN');
  });

  it('a failed pull keeps the zone; a failed reload puts the previous file back (exit 4)', async () => {
    const zone = readFileSync(lab.rpzFile, 'utf8');
    sim.setFault('reset', { routes: ['GET /urls'] });
    expect((await sync()).exitCode).toBe(3);
    sim.setFault(null);
    expect(readFileSync(lab.rpzFile, 'utf8')).toBe(zone);
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');

    sim.upsertUrl('https://new-evil.example/', { score: 9 });
    const broken = writeConfig({ ...JSON.parse(readFileSync(cfg.path, 'utf8')), state_dir: `${cfg.dir}/state`, rpz_reload: [...lab.control, 'auth_zone_reload', 'no-such-zone'] });
    const r = await sync(broken.path);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('no-such-zone');
    expect(readFileSync(lab.rpzFile, 'utf8')).toBe(zone);
  });

  it('flush empties the zone (the resolver still loads it) and unblocks', async () => {
    expect((await runCli(['flush', '--config', cfg.path])).exitCode).toBe(0);
    expect(readFileSync(lab.rpzFile, 'utf8')).not.toMatch(/CNAME/);
    expect(await lab.answers('evil-site.example')).toEqual([RECORDS['evil-site.example']]);
  });
});
