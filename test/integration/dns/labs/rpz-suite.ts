import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../simulator/index.js';
import { runCli, writeConfig } from '../../../helpers/cli.js';
import { isRoot } from '../../../netns/netns.js';
import { createRealResolverLab, type RealResolverLab, type ResolverSpec } from './real-resolver.js';

/** Every name the tests ask about, as the lab's authority answers it. */
export const RECORDS: Record<string, string> = {
  'evil-site.example': '198.18.0.10',
  'www.evil-site.example': '198.18.0.11',
  'good.example': '198.18.0.12',
  'white.example': '198.18.0.14',
  'later-white.example': '198.18.0.15',
  'docs.google.com': '198.18.0.16',
  'co.uk': '198.18.0.17',
  'phish.co.uk': '198.18.0.18',
  'new-evil.example': '198.18.0.19',
};

/** The feed: blocked names, and the traps the agent must never block. */
export function seedUrls(sim: Simulator): void {
  const now = sim.clock.now();
  sim.upsertUrl('https://evil-site.example/a', { score: 9, ts: now });
  sim.upsertUrl('https://phish.co.uk/', { score: 8, ts: now });
  sim.upsertUrl('https://later-white.example/x', { score: 9, ts: now });
  // Traps: a shared platform, a public suffix, a host with a whitelisted URL.
  sim.upsertUrl('https://docs.google.com/d/x', { score: 10, ts: now });
  sim.upsertUrl('https://co.uk/', { score: 10, ts: now });
  sim.upsertUrl('https://white.example/1', { score: 9, ts: now });
  sim.upsertUrl('https://white.example/2', { score: 1, ts: now, tags: ['whitelisted'] });
}

/**
 * The URL feed through a real resolver, configured as docs/url-feed.md says: the agent's
 * CLI against the simulator, the resolver in a namespace of its own forwarding to the lab's
 * authority. `fileName` is the agent's file in the lab, `initial` what it holds when the resolver
 * first starts (as install.sh leaves it); `holds` whether the file's text blocks a name.
 */
export function describeResolver(spec: ResolverSpec, o: { fileName: string; initial?: string; holds: (text: string, name: string) => boolean }): void {
  describe(`${spec.daemon}, configured as docs/url-feed.md says`, () => {
    let sim: Simulator;
    let lab: RealResolverLab;
    let cfg: { path: string; dir: string };
    const sync = (config = cfg.path) => runCli(['sync', '--once', '--config', config]);
    const why = () => `${spec.daemon} said:\n${lab.output().slice(-3000)}`;

    beforeAll(async () => {
      if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
      sim = await startSimulator({ indicators: 20, urls: 0, seed: 4, agentConfig: { score_threshold: '4' } });
      seedUrls(sim);
      lab = await createRealResolverLab(spec, { records: RECORDS, file: o.fileName, ...(o.initial === undefined ? {} : { initial: o.initial }) });
      cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, ...lab.agent });
    });

    afterAll(async () => {
      await lab?.destroy();
      await sim?.close();
    });

    it('blocks the feed\'s names and their subdomains; the protected names and the rest resolve', async () => {
      const r = await sync();
      expect(r.exitCode, r.stderr).toBe(0);
      for (const n of ['evil-site.example', 'www.evil-site.example', 'phish.co.uk', 'later-white.example']) expect(await lab.status(n), `${n}\n${why()}`).toBe('NXDOMAIN');
      for (const n of ['good.example', 'white.example', 'docs.google.com', 'co.uk']) expect(await lab.answers(n), n).toEqual([RECORDS[n]]);
    });

    it('a URL whitelisted on the server is unblocked by the next sync (a cached NXDOMAIN included)', async () => {
      expect(await lab.status('later-white.example')).toBe('NXDOMAIN');
      sim.upsertUrl('https://later-white.example/ok', { score: 1, tags: ['whitelisted'] });
      const r = await sync();
      expect(r.exitCode, r.stderr).toBe(0);
      expect(o.holds(readFileSync(lab.file, 'utf8'), 'later-white.example')).toBe(false);
      await lab.settlesTo('later-white.example', 'NOERROR');
      expect(await lab.answers('later-white.example')).toEqual([RECORDS['later-white.example']]);
      expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    });

    it('a restart of the resolver keeps the blocks', async () => {
      await lab.stop();
      await lab.start();
      expect(await lab.status('www.evil-site.example'), why()).toBe('NXDOMAIN');
      expect(await lab.status('phish.co.uk')).toBe('NXDOMAIN');
      expect(await lab.answers('good.example')).toEqual([RECORDS['good.example']]);
    });

    it('a reload that fails leaves the last good zone in force, in the file and at the resolver (exit 4)', async () => {
      const before = readFileSync(lab.file, 'utf8');
      sim.upsertUrl('https://new-evil.example/', { score: 9 });
      const broken = writeConfig({ ...(JSON.parse(readFileSync(cfg.path, 'utf8')) as object), state_dir: `${cfg.dir}/state`, [lab.agent.dns_plugin === 'dnsmasq' ? 'dnsmasq_reload' : 'rpz_reload']: lab.failingReload });
      const r = await sync(broken.path);
      expect(r.exitCode, r.stderr).toBe(4);
      expect(r.stderr).toContain(lab.failingReload[0]);
      expect(readFileSync(lab.file, 'utf8')).toBe(before);
      // A resolver that watches its file read the new one meanwhile: it must come back to the old one.
      await lab.settlesTo('new-evil.example', 'NOERROR');
      expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
      expect(await lab.status('www.evil-site.example')).toBe('NXDOMAIN');
    });

    it('flush empties the file, which the resolver still loads, and unblocks', async () => {
      const r = await runCli(['flush', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(o.holds(readFileSync(lab.file, 'utf8'), 'evil-site.example')).toBe(false);
      await lab.settlesTo('evil-site.example', 'NOERROR');
      await lab.settlesTo('phish.co.uk', 'NOERROR');
      expect(await lab.answers('www.evil-site.example')).toEqual([RECORDS['www.evil-site.example']]);
      // Still a file the resolver loads: a restart with it comes up and answers.
      await lab.stop();
      await lab.start();
      expect(await lab.answers('evil-site.example'), why()).toEqual([RECORDS['evil-site.example']]);
    });
  });
}
