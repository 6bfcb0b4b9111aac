import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/errors.js';

const base = { agid: 'a', base_url: 'https://threat-intel.internal/api/v1', token: 't' };
const parse = (extra: Record<string, unknown>) => parseConfig(JSON.stringify({ ...base, ...extra }), '/etc/wcf-agent/config.json');
const problems = (extra: Record<string, unknown>): string[] => {
  try {
    parse(extra);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
};

describe('URL feed configuration', () => {
  it('defaults: off, unbound, nxdomain, 100,000 names, the agent-owned include file', () => {
    const c = parse({});
    expect(c).toMatchObject({ url_feed: false, dns_plugin: 'unbound', dns_action: 'nxdomain', maximum_domains: 100_000, unbound_control: ['unbound-control'], unbound_conf_file: '/etc/unbound/wcf-agent/blocks.conf', domain_allowlist: [], shared_domains: [] });
    expect(c.url_score_threshold).toBeUndefined();
  });

  it('names are normalised once (lower case, no trailing dot)', () => {
    expect(parse({ domain_allowlist: ['Intranet.Example.'], shared_domains: ['CDN.example'] })).toMatchObject({ domain_allowlist: ['intranet.example'], shared_domains: ['cdn.example'] });
  });

  it('bad values are `path: message` lines naming the key', () => {
    expect(problems({ dns_action: 'sinkhole' })).toEqual(['sinkhole_address: required when dns_action is "sinkhole"']);
    expect(problems({ dns_plugin: 'rpz' })).toEqual(['rpz_file: required when dns_plugin is "rpz"']);
    expect(problems({ domain_allowlist: ['ok.example', 'bad name"'] })[0]).toMatch(/^domain_allowlist\.1: must be a DNS name/);
    expect(problems({ sinkhole_address: '10.0.0.300', dns_action: 'sinkhole' })[0]).toMatch(/^sinkhole_address: /);
    expect(problems({ unbound_control: [] })[0]).toMatch(/^unbound_control: /);
    expect(problems({ dns_plugin: 'bind' })[0]).toMatch(/^dns_plugin: /);
    expect(problems({ maximum_domains: 0 })[0]).toMatch(/^maximum_domains: /);
    expect(problems({ url_feeds: true })).toEqual(['url_feeds: unknown key (did you mean url_feed?)']);
  });

  it('dnsmasq: its own file by default, the signal command required (dnsmasq never reads the file again on its own)', () => {
    expect(parse({ dns_plugin: 'dnsmasq', dnsmasq_reload: ['systemctl', 'kill', '-s', 'HUP', 'dnsmasq'] })).toMatchObject({ dnsmasq_file: '/var/lib/wcf-agent-dnsmasq/servers.conf' });
    expect(problems({ dns_plugin: 'dnsmasq' })).toEqual([expect.stringMatching(/^dnsmasq_reload: required when dns_plugin is "dnsmasq"/)]);
    expect(problems({ dns_plugin: 'dnsmasq', dnsmasq_reload: [] })[0]).toMatch(/^dnsmasq_reload: /);
  });

  it('dnsmasq cannot sinkhole a name with its subdomains: sinkhole with dnsmasq is refused, naming dns_action', () => {
    const p = problems({ dns_plugin: 'dnsmasq', dnsmasq_reload: ['true'], dns_action: 'sinkhole', sinkhole_address: '192.0.2.1' });
    expect(p).toEqual([expect.stringMatching(/^dns_action: dnsmasq cannot give a blocked name's subdomains the sinkhole address/)]);
    expect(p[0]).toContain('addn-hosts covers exact names only');
    // The same sinkhole with the backends that can do it is fine.
    expect(problems({ dns_plugin: 'rpz', rpz_file: '/var/lib/wcf-agent-rpz/rpz.wcf.zone', dns_action: 'sinkhole', sinkhole_address: '192.0.2.1' })).toEqual([]);
  });
});
