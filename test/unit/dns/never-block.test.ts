import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { proxyEnvFor } from '../../../src/api/http.js';
import { parseConfig } from '../../../src/config/load.js';
import { domainPolicyOf } from '../../../src/dns/index.js';

/**
 * The names the agent's own traffic needs are never blocked at the resolver: the API host,
 * the proxy the transport goes through (config `proxy`, else HTTPS_PROXY / HTTP_PROXY) and the
 * NO_PROXY names the transport honours, each with its parents (a blocked name covers its
 * subdomains, so blocking `corp.lan` would take `proxy.corp.lan` with it).
 */

const base = { agid: 'a', base_url: 'https://ti.vendor.lan/api/v1', token: 't', url_feed: true };
const config = (extra: Record<string, unknown> = {}) => parseConfig(JSON.stringify({ ...base, ...extra }), '/etc/wcf-agent/config.json');
const NO_HOST = { searchDomains: [] };

describe('names the agent itself needs are never blocked', () => {
  it('config `proxy`: its host and every parent, and nothing beside them', () => {
    const p = domainPolicyOf(config({ proxy: 'http://proxy.corp.lan:3128' }), NO_HOST, {});
    expect(p.veto('proxy.corp.lan')).toBe('allowlist');
    expect(p.veto('corp.lan')).toBe('allowlist');
    expect(p.veto('other.corp.lan')).toBeNull();
    expect(p.veto('evil.example')).toBeNull();
    // The API host as before.
    expect(p.veto('vendor.lan')).toBe('allowlist');
  });

  it('HTTPS_PROXY / HTTP_PROXY (either case) when config has no proxy', () => {
    const env = { HTTPS_PROXY: 'http://sec-proxy.corp.lan:3128', http_proxy: 'plain-proxy.branch.lan:8080' };
    const p = domainPolicyOf(config(), NO_HOST, env);
    for (const n of ['sec-proxy.corp.lan', 'corp.lan', 'plain-proxy.branch.lan', 'branch.lan']) expect(p.veto(n), n).toBe('allowlist');
  });

  it('NO_PROXY names (and their parents) the transport honours: with a proxy from the environment only', () => {
    const env = { HTTPS_PROXY: 'http://proxy.corp.lan:3128', NO_PROXY: 'localhost, .intranet.corp.lan,*.wiki.example, git.example:8443, 10.0.0.0/8, 192.168.1.1-192.168.1.9, *' };
    const p = domainPolicyOf(config(), NO_HOST, env);
    for (const n of ['intranet.corp.lan', 'wiki.example', 'git.example']) expect(p.veto(n), n).toBe('allowlist');
    expect(p.keptBy('wiki.example')).toEqual({ rule: 'allowlist', zone: 'wiki.example', source: 'NO_PROXY' });
    // localhost is kept in any case, as a special-use name.
    expect(p.keptBy('localhost')).toEqual({ rule: 'special_use', zone: 'localhost', source: 'built in' });
    // Only the names themselves and their parents: a feed can still block a host below them.
    expect(p.veto('evil.intranet.corp.lan')).toBeNull();
    // A configured proxy carries every call, NO_PROXY included, so NO_PROXY protects nothing then;
    // the configured proxy wins over the environment's.
    const q = domainPolicyOf(config({ proxy: 'http://cfg-proxy.example:3128' }), NO_HOST, env);
    expect(q.veto('cfg-proxy.example')).toBe('allowlist');
    expect(q.veto('wiki.example')).toBeNull();
    expect(q.veto('proxy.corp.lan')).toBeNull();
    // Without any proxy the transport ignores NO_PROXY.
    expect(domainPolicyOf(config(), NO_HOST, { NO_PROXY: 'wiki.example' }).veto('wiki.example')).toBeNull();
  });

  it('a proxy named by address protects no name', () => {
    const p = domainPolicyOf(config({ proxy: 'http://10.1.2.3:3128' }), NO_HOST, {});
    expect(p.veto('1.2.3')).toBeNull();
    expect(p.veto('evil.example')).toBeNull();
  });

  it('whatever the settings, the proxy the transport connects to is protected (its own decision, Node\'s lower-case-first rule)', () => {
    const host = fc.constantFrom('p1.corp.lan', 'p2.corp.lan', 'proxy.branch.lan', 'PROXY.Corp.LAN.');
    const value = fc.option(host.map((h) => `http://${h}:3128`), { nil: undefined });
    fc.assert(
      fc.property(value, value, value, value, value, (cfg, HTTP_PROXY, http_proxy, HTTPS_PROXY, https_proxy) => {
        const env = Object.fromEntries(Object.entries({ HTTP_PROXY, http_proxy, HTTPS_PROXY, https_proxy }).filter(([, v]) => v !== undefined));
        const policy = domainPolicyOf(config(cfg ? { proxy: cfg } : {}), NO_HOST, env);
        const used = proxyEnvFor(cfg, env);
        for (const v of [used?.https_proxy || used?.HTTPS_PROXY, used?.http_proxy || used?.HTTP_PROXY]) {
          if (!v) continue;
          const name = new URL(v).hostname.replace(/\.$/, '');
          expect(policy.veto(name), name).toBe('allowlist');
        }
      }),
      { numRuns: 300 },
    );
  });
});
