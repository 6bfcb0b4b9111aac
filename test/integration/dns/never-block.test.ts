import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { parseRpzNames, parseUnboundInclude } from '../../../src/dns/render.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot, type Netns } from '../../netns/netns.js';
import { dnsmasq } from './labs/dnsmasq.js';
import { createRealResolverLab } from './labs/real-resolver.js';
import { createResolverLab } from './resolver-lab.js';

/**
 * Names that are never anyone's to block, end to end through real resolvers: the feed lists the
 * reverse zones of the host's networks, Kubernetes' cluster domain, special-use names and the
 * host's search domain beside a name it may block. After a sync, with dnsmasq, unbound and an RPZ
 * zone (in unbound), the listed name answers NXDOMAIN while the PTR of 10.1.2.3,
 * kubernetes.default.svc.cluster.local and the rest still resolve, none of them is in the agent's
 * file, and `explain` names the rule that keeps each.
 */

/** The cluster's own domain (config cluster_domain), and the search domain of the lab's resolv.conf. */
const CLUSTER = 'k8s.lab.example';
const SEARCH = 'corp.example';

const RECORDS: Record<string, string> = {
  'evil-site.example': '198.18.0.10',
  'kubernetes.default.svc.cluster.local': '198.18.0.31',
  [`kubernetes.default.svc.${CLUSTER}`]: '198.18.0.32',
  'app.corp.internal': '198.18.0.33',
  'printer.local': '198.18.0.34',
  'app.test': '198.18.0.35',
  [`printer.${SEARCH}`]: '198.18.0.36',
};
const PTR: Record<string, string> = { '10.1.2.3': 'host-10-1-2-3.lab.example.', '192.168.1.5': 'nas.lab.example.' };
const ZONE_LINES = Object.entries(PTR).map(([ip, name]) => `${ip.split('.').reverse().join('.')}.in-addr.arpa. IN PTR ${name}`);

/** What the feed lists: the one name that may be blocked, and names that never are. */
const LISTED = ['evil-site.example', '10.in-addr.arpa', '168.192.in-addr.arpa', '3.2.1.10.in-addr.arpa', 'in-addr.arpa', 'cluster.local', 'svc.cluster.local', CLUSTER, `svc.${CLUSTER}`, 'corp.internal', 'local', 'app.test', SEARCH, `printer.${SEARCH}`];
/** Each name kept, with the rule `explain` gives and the name that rule protects. */
const KEPT: [name: string, rule: string, zone: string][] = [
  ['10.in-addr.arpa', 'reverse_zone', 'in-addr.arpa'],
  ['3.2.1.10.in-addr.arpa', 'reverse_zone', 'in-addr.arpa'],
  ['cluster.local', 'special_use', 'local'],
  [CLUSTER, 'cluster_domain', CLUSTER],
  [`svc.${CLUSTER}`, 'cluster_domain', CLUSTER],
  ['lab.example', 'cluster_domain', CLUSTER],
  ['corp.internal', 'special_use', 'internal'],
  ['app.test', 'special_use', 'test'],
  [SEARCH, 'search_domain', SEARCH],
  [`printer.${SEARCH}`, 'search_domain', SEARCH],
];

interface Backend {
  name: string;
  /** The lab: its namespace, the agent's file and config keys, and a way to take it down. */
  make(): Promise<{ ns: Netns; file: string; agent: Record<string, unknown>; names: (text: string) => string[]; destroy: () => Promise<void> }>;
}

const NODEFAULT = ['local-zone: "10.in-addr.arpa." nodefault', 'local-zone: "168.192.in-addr.arpa." nodefault'];
const BACKENDS: Backend[] = [
  {
    name: 'dnsmasq',
    async make() {
      const lab = await createRealResolverLab(dnsmasq, { records: RECORDS, file: 'servers.conf', zoneLines: ZONE_LINES });
      return { ns: lab.ns, file: lab.file, agent: lab.agent, names: parseServersFile, destroy: () => lab.destroy() };
    },
  },
  {
    name: 'unbound',
    async make() {
      const lab = await createResolverLab({ records: RECORDS, zoneLines: ZONE_LINES, serverLines: NODEFAULT });
      const agent = { url_feed: true, dns_plugin: 'unbound', unbound_control: lab.control, unbound_conf_file: lab.includeFile };
      return { ns: lab.ns, file: lab.includeFile, agent, names: parseUnboundInclude, destroy: () => lab.destroy() };
    },
  },
  {
    name: 'rpz',
    async make() {
      const lab = await createResolverLab({ records: RECORDS, zoneLines: ZONE_LINES, serverLines: NODEFAULT, rpz: true });
      const agent = { url_feed: true, dns_plugin: 'rpz', rpz_file: lab.rpzFile, rpz_reload: [...lab.control, 'auth_zone_reload', 'rpz.wcf'] };
      return { ns: lab.ns, file: lab.rpzFile, agent, names: parseRpzNames, destroy: () => lab.destroy() };
    },
  },
];

describe.each(BACKENDS)('names never blocked, with $name', (backend) => {
  let sim: Simulator;
  let lab: Awaited<ReturnType<Backend['make']>>;
  let cfg: { path: string; dir: string };
  let etc: string | undefined;
  const dig = async (...args: string[]) => (await lab.ns.exec('dig', ['+short', '+time=2', '+tries=1', '@127.0.0.1', ...args])).split('\n').filter(Boolean);
  const status = async (name: string) => /status: (\w+)/.exec(await lab.ns.exec('dig', ['+time=2', '+tries=1', '@127.0.0.1', name, 'A']))?.[1];

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 45, agentConfig: { score_threshold: '4' } });
    const now = sim.clock.now();
    for (const n of LISTED) sim.upsertUrl(`http://${n}/login`, { score: 9, ts: now });
    lab = await backend.make();
    // The host's resolv.conf as the agent reads it with `netns` (ip netns exec mounts it there).
    etc = `/etc/netns/${lab.ns.name}`;
    mkdirSync(etc, { recursive: true });
    writeFileSync(`${etc}/resolv.conf`, `nameserver 127.0.0.1\nsearch ${SEARCH}\n`);
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, cluster_domain: CLUSTER, ...lab.agent });
  });

  afterAll(async () => {
    if (etc) rmSync(etc, { recursive: true, force: true });
    await lab?.destroy();
    await sim?.close();
  });

  it('the listed name is blocked; the PTR of 10.1.2.3, the cluster\'s services, special-use names and the search domain still resolve', async () => {
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(lab.names(readFileSync(lab.file, 'utf8'))).toEqual(['evil-site.example']);
    expect(await status('evil-site.example')).toBe('NXDOMAIN');
    for (const [ip, name] of Object.entries(PTR)) expect(await dig('-x', ip), `PTR of ${ip}`).toEqual([name]);
    for (const [name, address] of Object.entries(RECORDS)) if (name !== 'evil-site.example') expect(await dig(name, 'A'), name).toEqual([address]);
  });

  it('explain names the rule that keeps each, and the name it protects', async () => {
    for (const [name, rule, zone] of KEPT) {
      const r = await runCli(['explain', name, '--json', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(0);
      const v = JSON.parse(r.stdout) as { verdict: string; blocked: boolean; kept_by: { rule: string; zone: string; source: string } | null };
      expect(v, name).toMatchObject({ verdict: rule, blocked: false, kept_by: { rule, zone } });
    }
    const search = JSON.parse((await runCli(['explain', `printer.${SEARCH}`, '--json', '--config', cfg.path])).stdout) as { kept_by: { source: string } };
    expect(search.kept_by.source).toBe(`${etc}/resolv.conf`);
    const text = await runCli(['explain', '3.2.1.10.in-addr.arpa', '--config', cfg.path]);
    expect(text.stdout).toMatch(/^3\.2\.1\.10\.in-addr\.arpa: reverse_zone \(never blocked: .*\)\n {2}kept by: it is under the reverse zone in-addr\.arpa$/m);
    const parent = await runCli(['explain', 'lab.example', '--config', cfg.path]);
    expect(parent.stdout).toContain(`kept by: blocking it would block Kubernetes' cluster domain ${CLUSTER} (cluster_domain) too`);
  });
});
