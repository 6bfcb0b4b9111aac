import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/errors.js';
import { domainPolicyOf } from '../../../src/dns/index.js';
import { hostDomainPolicy } from '../../../src/host/domain-policy.js';
import { readSearchDomains, type HostPaths } from '../../../src/host/facts.js';
import { parseSearchDomains } from '../../../src/host/resolv-conf.js';
import { UrlCache } from '../../../src/feed/url-cache.js';
import { selectDomains } from '../../../src/policy/domains.js';
import { createScoring } from '../../../src/score/decay.js';

/**
 * Names that are never anyone's to block, like the protected set for addresses: the reverse zones,
 * the special-use names, Kubernetes' cluster domain and the host's search domains, each with every
 * name under it and every parent (a blocked parent would cover it).
 */

const base = { agid: 'a', base_url: 'https://ti.vendor.lan/api/v1', token: 't', url_feed: true };
const config = (extra: Record<string, unknown> = {}) => parseConfig(JSON.stringify({ ...base, ...extra }), '/etc/wcf-agent/config.json');
const policy = (extra: Record<string, unknown> = {}, searchDomains: { name: string; source: string }[] = []) => domainPolicyOf(config(extra), { searchDomains }, {});

describe('names never blocked', () => {
  it('the reverse zones and everything under them: the PTR names of every address', () => {
    const p = policy();
    for (const n of ['in-addr.arpa', '10.in-addr.arpa', '168.192.in-addr.arpa', '3.2.1.10.in-addr.arpa', 'ip6.arpa', '8.b.d.0.1.0.0.2.ip6.arpa']) {
      expect(p.keptBy(n), n).toEqual({ rule: 'reverse_zone', zone: n.endsWith('ip6.arpa') ? 'ip6.arpa' : 'in-addr.arpa', source: 'built in' });
    }
    for (const n of ['in-addr.arpa.evil.example', 'evil-in-addr.arpa.example']) expect(p.veto(n), n).toBeNull();
  });

  it('the special-use names and everything under them', () => {
    const p = policy();
    for (const zone of ['localhost', 'local', 'invalid', 'test', 'home.arpa', 'internal', 'onion', 'alt']) {
      for (const n of [zone, `evil.${zone}`, `a.b.${zone}`]) expect(p.keptBy(n), n).toEqual({ rule: 'special_use', zone, source: 'built in' });
    }
    expect(p.veto('corp.internal')).toBe('special_use');
    expect(p.veto('ip-10-0-0-1.ec2.internal')).toBe('special_use');
    // Only the names themselves: a registrable name that merely contains them may be blocked.
    for (const n of ['local.example', 'internal.example', 'testing.example', 'onion.example', 'my-localhost.example']) expect(p.veto(n), n).toBeNull();
  });

  it("Kubernetes' cluster domain (cluster.local by default), everything under it and its parents; configurable", () => {
    const p = policy();
    for (const n of ['cluster.local', 'svc.cluster.local', 'kubernetes.default.svc.cluster.local']) expect(p.keptBy(n), n).toEqual({ rule: 'cluster_domain', zone: 'cluster.local', source: 'cluster_domain' });
    const q = policy({ cluster_domain: 'K8s.Corp.Example.' });
    expect(config({ cluster_domain: 'K8s.Corp.Example.' }).cluster_domain).toBe('k8s.corp.example');
    for (const n of ['k8s.corp.example', 'svc.k8s.corp.example', 'kubernetes.default.svc.k8s.corp.example']) expect(q.keptBy(n), n).toEqual({ rule: 'cluster_domain', zone: 'k8s.corp.example', source: 'cluster_domain' });
    // A cluster domain the Public Suffix List lists would keep every name under it: none is kept.
    expect(policy({ cluster_domain: 'com' }).veto('evil.com')).toBeNull();
    expect(policy({ cluster_domain: 'com' }).ignoredZones).toEqual([{ name: 'com', source: 'cluster_domain' }]);
    // A parent: blocking it would block the cluster's names too.
    expect(q.veto('corp.example')).toBe('cluster_domain');
    expect(q.veto('other.corp.example')).toBeNull();
    // cluster.local stays kept as a special-use name even then.
    expect(q.veto('svc.cluster.local')).toBe('special_use');
  });

  it('cluster_domain must be a DNS name: the error names the key', () => {
    expect(() => config({ cluster_domain: 'cluster local' })).toThrow(ConfigError);
    expect(() => config({ cluster_domain: 'cluster local' })).toThrow(/cluster_domain/);
    expect(config().cluster_domain).toBe('cluster.local');
  });

  it('the search domains, everything under them and their parents; never a public suffix', () => {
    const p = policy({}, [
      { name: 'corp.example', source: '/etc/resolv.conf' },
      { name: 'branch.corp2.example', source: '/run/systemd/resolve/resolv.conf' },
      { name: 'com', source: '/etc/resolv.conf' },
      { name: 'github.io', source: '/etc/resolv.conf' },
      // A home router's: no suffix the list names, so kept.
      { name: 'lan', source: '/etc/resolv.conf' },
    ]);
    expect(p.keptBy('printer.lan')).toEqual({ rule: 'search_domain', zone: 'lan', source: '/etc/resolv.conf' });
    for (const n of ['corp.example', 'printer.corp.example']) expect(p.keptBy(n), n).toEqual({ rule: 'search_domain', zone: 'corp.example', source: '/etc/resolv.conf' });
    expect(p.keptBy('corp2.example')).toEqual({ rule: 'search_domain', zone: 'branch.corp2.example', source: '/run/systemd/resolve/resolv.conf' });
    expect(p.veto('evil.example')).toBeNull();
    // `search com` would keep every .com name: left out, and said.
    expect(p.ignoredZones.map((z) => z.name)).toEqual(['com', 'github.io']);
    expect(p.veto('evil.com')).toBeNull();
    expect(p.veto('evil.github.io')).toBeNull();
  });

  it('the selection skips them, counted by rule, and blocks the rest', () => {
    const now = 1_795_000_000;
    const urls = new UrlCache();
    for (const h of ['10.in-addr.arpa', '168.192.in-addr.arpa', 'cluster.local', 'svc.cluster.local', 'corp.internal', 'printer.corp.example', 'evil.example']) urls.upsert(`http://${h}/x`, 9, now, -1);
    const s = selectDomains({ now, urls, scoring: createScoring({}), threshold: 4, maximumDomains: 100, policy: policy({}, [{ name: 'corp.example', source: '/etc/resolv.conf' }]) });
    expect(s.domains.map((d) => d.name)).toEqual(['evil.example']);
    expect(s.skipped).toMatchObject({ reverse_zone: 2, cluster_domain: 2, special_use: 1, search_domain: 1 });
  });
});

describe("the host's search domains", () => {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-search-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const logger = pino({ level: 'silent' });

  it('resolv.conf: every search and domain line, lower case, no trailing dot, no root, once each', () => {
    const text = ['# generated', 'domain Corp.Example.', 'search corp.example lab.corp.example . b@d', '  search\tother.example # comment', ';search skipped.example', 'nameserver 192.0.2.53', 'options ndots:5'].join('\n');
    expect(parseSearchDomains(text)).toEqual(['corp.example', 'lab.corp.example', 'other.example']);
    // A Kubernetes pod's resolv.conf.
    expect(parseSearchDomains('search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n')).toEqual(['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local']);
  });

  it("read from the same files as the resolvers: the namespace's own, else /etc/resolv.conf, and systemd-resolved's", () => {
    const paths: HostPaths = { resolvConf: join(dir, 'resolv.conf'), resolvedUpstreams: join(dir, 'upstreams.conf'), netnsEtc: join(dir, 'netns'), utmp: join(dir, 'utmp'), procNetRoute: '/proc/net/route' };
    writeFileSync(paths.resolvConf, 'nameserver 127.0.0.53\nsearch corp.example\n');
    writeFileSync(paths.resolvedUpstreams, 'nameserver 192.0.2.53\nsearch corp.example dc.corp.example\n');
    mkdirSync(join(paths.netnsEtc, 'lab'), { recursive: true });
    writeFileSync(join(paths.netnsEtc, 'lab', 'resolv.conf'), 'search lab.example\n');
    expect(readSearchDomains(paths)).toEqual([
      { name: 'corp.example', file: paths.resolvConf },
      { name: 'dc.corp.example', file: paths.resolvedUpstreams },
    ]);
    expect(readSearchDomains(paths, 'lab').map((d) => d.name)).toEqual(['lab.example', 'corp.example', 'dc.corp.example']);
    expect(readSearchDomains(paths, 'other').map((d) => d.name)).toEqual(['corp.example', 'dc.corp.example']);
    // Into the policy, with the file each came from.
    const p = hostDomainPolicy(config(), logger, { paths, env: {} });
    expect(p.keptBy('nas.dc.corp.example')).toEqual({ rule: 'search_domain', zone: 'dc.corp.example', source: paths.resolvedUpstreams });
  });

  it('a search domain that is a public suffix is left out, with a warning naming it, its file and what to fix', () => {
    const paths: HostPaths = { resolvConf: join(dir, 'psl.conf'), resolvedUpstreams: join(dir, 'none.conf'), netnsEtc: join(dir, 'netns'), utmp: join(dir, 'utmp'), procNetRoute: '/proc/net/route' };
    writeFileSync(paths.resolvConf, 'search com corp.example\n');
    const lines: string[] = [];
    const capture = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const p = hostDomainPolicy(config(), capture, { paths, env: {} });
    expect(p.veto('evil.com')).toBeNull();
    expect(p.veto('printer.corp.example')).toBe('search_domain');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).msg).toBe(`public suffixes are not kept from blocking as a search or cluster domain (that would keep every name under them): com (${paths.resolvConf}); fix the search line of resolv.conf, or cluster_domain in config.json`);
  });
});
