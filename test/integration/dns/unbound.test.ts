import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * The whole agent (built CLI) with `url_feed` on against a real unbound in a namespace:
 * the simulator serves URLs, `sync --once` blocks their hosts through unbound-control and
 * the include file, and dig inside the namespace shows what a user of the resolver sees.
 */

const RECORDS: Record<string, string> = {
  'evil-site.example': '198.18.0.10',
  'www.evil-site.example': '198.18.0.11',
  'good.example': '198.18.0.12',
  'low.example': '198.18.0.13',
  'white.example': '198.18.0.14',
  'manual.example': '198.18.0.15',
  'docs.google.com': '198.18.0.16',
  'github.io': '198.18.0.17',
  'bad.github.io': '198.18.0.18',
  'www.bad.github.io': '198.18.0.19',
  'admin-zone.example': '198.18.0.20',
  'allowed.example': '198.18.0.21',
  'a.allowed.example': '198.18.0.22',
};

function seedUrls(sim: Simulator): void {
  const now = sim.clock.now();
  sim.upsertUrl('https://evil-site.example/login.php?next=%2F', { score: 9, ts: now });
  sim.upsertUrl('HTTPS://user:pw@EVIL-SITE.EXAMPLE.:8443/other', { score: 3, ts: now });
  sim.upsertUrl('https://docs.google.com/forms/d/phish', { score: 10, ts: now });
  sim.upsertUrl('http://github.io/', { score: 10, ts: now });
  sim.upsertUrl('http://bad.github.io/x', { score: 9, ts: now });
  sim.upsertUrl('http://low.example/a', { score: 1, ts: now });
  sim.upsertUrl('http://white.example/bad', { score: 9, ts: now });
  sim.upsertUrl('http://white.example/fine', { score: 9, ts: now, tags: ['whitelisted'] });
  sim.upsertUrl('http://manual.example/', { score: 1, ts: now, tags: ['blacklisted'] });
  sim.upsertUrl('http://admin-zone.example/', { score: 9, ts: now });
  sim.upsertUrl('http://a.allowed.example/', { score: 9, ts: now });
  sim.upsertUrl('http://198.18.0.77:8080/payload', { score: 9, ts: now });
}

describe.each(['nxdomain', 'sinkhole'] as const)('unbound plugin (%s)', (action) => {
  let sim: Simulator;
  let lab: ResolverLab;
  let cfg: { path: string; dir: string };
  let zonesBefore: string[];
  const blocked = async (name: string) => (action === 'nxdomain' ? (await lab.status(name)) === 'NXDOMAIN' : (await lab.answers(name)).join() === '198.18.0.99');
  const sync = async () => {
    const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
    // sync --json prints the outcome; what was selected comes from plan --json (the same selection, nothing applied).
    const p = await runCli(['plan', '--json', '--config', cfg.path]);
    type Plan = { entries: { ip: string; reason: string }[]; domains: { name: string; reason: string; urls: number }[] };
    const plan = p.stdout ? (JSON.parse(p.stdout) as Plan) : undefined;
    return { ...r, json: r.stdout ? { ...(JSON.parse(r.stdout) as { ok: boolean; code: number; dns: { applied: number; result: { foreign: string[] } } }), plan: plan! } : undefined };
  };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 50, urls: 0, seed: 3, agentConfig: { score_threshold: '4', maximum_rules: '100' } });
    seedUrls(sim);
    lab = await createResolverLab({ records: RECORDS, serverLines: ['local-zone: "admin-zone.example." transparent'] });
    zonesBefore = await lab.localZones();
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
      domain_allowlist: ['allowed.example'],
      ...(action === 'sinkhole' ? { dns_action: 'sinkhole', sinkhole_address: '198.18.0.99' } : {}),
    });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('blocks scored and blacklisted hosts and their subdomains; everything else still resolves', async () => {
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    const domains = r.json!.plan.domains;
    expect(domains.map((d) => d.name).sort()).toEqual(['admin-zone.example', 'bad.github.io', 'evil-site.example', 'manual.example']);
    // unbound already has an operator's zone of that name: selected, but never taken over.
    expect(r.json!.dns.result.foreign).toEqual(['admin-zone.example']);
    expect(r.json!.dns.applied).toBe(3);
    expect(domains.find((d) => d.name === 'evil-site.example')!.urls).toBe(2);
    expect(domains.find((d) => d.name === 'manual.example')!.reason).toBe('manual');
    for (const n of ['evil-site.example', 'www.evil-site.example', 'manual.example', 'bad.github.io', 'www.bad.github.io']) expect(await blocked(n), n).toBe(true);
    // shared platform, public suffix, whitelisted URL, below threshold, allowlisted, someone else's zone
    for (const n of ['good.example', 'docs.google.com', 'github.io', 'white.example', 'low.example', 'a.allowed.example', 'admin-zone.example']) {
      expect(await lab.answers(n), n).toEqual([RECORDS[n]]);
    }
    // The IP-literal URL joined the firewall selection.
    expect(r.json!.plan.entries).toContainEqual(expect.objectContaining({ ip: '198.18.0.77', reason: 'url' }));
    expect(await lab.ns.exec('nft', ['list', 'set', 'inet', 'wcf_agent', 'wcf-blocklist'])).toContain('198.18.0.77');
  });

  it('keeps the blocks across an unbound restart (include file)', async () => {
    expect(readFileSync(lab.includeFile, 'utf8')).toContain('local-zone: "evil-site.example."');
    await lab.stop();
    await lab.start();
    expect(await blocked('www.evil-site.example')).toBe(true);
    expect(await lab.answers('good.example')).toEqual([RECORDS['good.example']]);
  });

  it('a failed pull keeps the blocks', async () => {
    sim.setFault('http500', { routes: ['GET /urls'] });
    const r = await sync();
    sim.setFault(null);
    expect(r.exitCode).toBe(3);
    expect(await blocked('evil-site.example')).toBe(true);
    expect(await blocked('manual.example')).toBe(true);
  });

  it('a URL decision takes effect at the next sync: whitelisting unblocks, blacklisting blocks', async () => {
    sim.decideUrl('http://bad.github.io/x', 0);
    sim.decideUrl('http://low.example/a', 1);
    const r = await sync();
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await lab.answers('bad.github.io')).toEqual([RECORDS['bad.github.io']]);
    expect(await blocked('low.example')).toBe(true);
  });

  it('flush removes exactly the agent\'s zones and nothing else', async () => {
    const r = await runCli(['flush', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await lab.localZones()).toEqual(zonesBefore);
    expect(await lab.answers('evil-site.example')).toEqual([RECORDS['evil-site.example']]);
    expect(readFileSync(lab.includeFile, 'utf8')).not.toContain('local-zone');
  });
});
