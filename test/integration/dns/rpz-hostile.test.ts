import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsRunner } from '../../../src/dns/exec.js';
import { createRpzPlugin } from '../../../src/dns/rpz/plugin.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * A hostile feed against the rpz plugin and a real unbound (`rpz:` clause, zone rpz.wcf):
 * a host name carrying an RPZ trigger label must not become a resolver-wide policy, and one
 * name too long for the zone must not cost every other block.
 */

/** Valid DNS names (labels of at most 63) of 243 and 249 characters: 243 fits `*.NAME.rpz.wcf.` in 255 octets, 249 does not. */
const FITS = ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63), 'd'.repeat(51)].join('.');
const TOO_LONG = ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63), 'e'.repeat(57)].join('.');

const RECORDS: Record<string, string> = {
  'evil-site.example': '198.18.0.10',
  'www.evil-site.example': '198.18.0.11',
  'good.example': '198.18.0.12',
  [FITS]: '198.18.0.13',
  [TOO_LONG]: '198.18.0.14',
};

describe('rpz plugin: hostile names in the feed', () => {
  let sim: Simulator;
  let lab: ResolverLab;
  let cfg: { path: string; dir: string };
  const reload = () => [...lab.control, 'auth_zone_reload', 'rpz.wcf'];
  const sync = () => runCli(['sync', '--once', '--config', cfg.path]);

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    expect(FITS.length).toBe(243);
    expect(TOO_LONG.length).toBe(249);
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 28, agentConfig: { score_threshold: '4' } });
    sim.upsertUrl('https://evil-site.example/a', { score: 9, ts: sim.clock.now() });
    lab = await createResolverLab({ records: RECORDS, rpz: true });
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, url_feed: true, dns_plugin: 'rpz', rpz_file: lab.rpzFile, rpz_reload: reload() });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('a host with an RPZ trigger label (rpz-client-ip 127.0.0.1/32, ...) is never written: every other name still resolves', async () => {
    const now = sim.clock.now();
    for (const trigger of ['32.1.0.0.127.rpz-client-ip', '32.12.0.18.198.rpz-ip', '32.1.0.0.127.rpz-nsip', 'ns.lab.rpz-nsdname', 'x.rpz-drop']) {
      sim.upsertUrl(`http://${trigger}/`, { score: 9, ts: now, tags: ['blacklisted'] });
    }
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.answers('good.example')).toEqual([RECORDS['good.example']]);
    expect(await lab.answers('www.evil-site.example')).toEqual([]);
    expect(readFileSync(lab.rpzFile, 'utf8')).not.toContain('rpz-');
  });

  it('a name too long for the zone with its wildcard and origin is skipped; the rest of the zone loads and blocks', async () => {
    const now = sim.clock.now();
    sim.upsertUrl(`http://${FITS}/x`, { score: 9, ts: now });
    sim.upsertUrl(`http://${TOO_LONG}/x`, { score: 9, ts: now });
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(TOO_LONG.slice(0, 40));
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.status(FITS)).toBe('NXDOMAIN');
    expect(await lab.answers(TOO_LONG)).toEqual([RECORDS[TOO_LONG]]);
    // And the next cycle, with the name still in the feed, succeeds as well.
    expect((await sync()).exitCode).toBe(0);
  });

  it('when the resolver refuses a zone, the previous file is put back and reloaded: the blocks stay in force', async () => {
    const before = readFileSync(lab.rpzFile, 'utf8');
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    // The backend on its own, given a zone unbound refuses (the name sorts first, so unbound
    // has cleared the zone before it stops reading).
    const plugin = createRpzPlugin({ zoneFile: lab.rpzFile, reload: reload(), answer: { action: 'nxdomain' }, runner: createDnsRunner(), logger: pino({ level: 'silent' }), now: () => Math.floor(Date.now() / 1000) });
    await expect(plugin.apply([TOO_LONG, 'evil-site.example'])).rejects.toThrow(/auth_zone_reload/);
    expect(readFileSync(lab.rpzFile, 'utf8')).toBe(before);
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.status('www.evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.status(FITS)).toBe('NXDOMAIN');
  });
});
