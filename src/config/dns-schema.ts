import { isIP } from 'node:net';
import * as z from './zod.js';
import { isDnsName } from '../net/dns-name.js';

/**
 * config.json keys of the URL feed and its resolver plugins, spread into the config
 * schema as one block. Names are lower-cased and lose a trailing dot here, once.
 */
const dnsName = z
  .pipe(
    z.string(),
    z.transform((s: string) => s.trim().toLowerCase().replace(/\.+$/, '')),
  )
  .check(z.refine(isDnsName, 'must be a DNS name (letters, digits, - and _, labels of 1..63 characters)'));

const nonEmpty = () => z.string().check(z.minLength(1));
const argv = z.array(nonEmpty()).check(z.minLength(1));
const intIn = (min: number, max: number) => z.number().check(z.int(), z.gte(min), z.lte(max));

export const DNS_LIMITS = { maximum_domains: 2_000_000, url_score_threshold: 1_000_000 } as const;

export const dnsConfigKeys = {
  url_feed: z._default(z.boolean(), false),
  dns_plugin: z._default(z.enum(['unbound', 'rpz', 'dnsmasq', 'dry-run']), 'unbound'),
  // Default: the score_threshold in force (from the server's stored configuration or the local default).
  url_score_threshold: z.optional(intIn(1, DNS_LIMITS.url_score_threshold)),
  maximum_domains: z._default(intIn(1, DNS_LIMITS.maximum_domains), 100_000),
  domain_allowlist: z._default(z.array(dnsName), []),
  shared_domains: z._default(z.array(dnsName), []),
  // Kubernetes' default (kubelet's clusterDomain); kept from blocking with every name under it.
  cluster_domain: z._default(dnsName, 'cluster.local'),
  dns_action: z._default(z.enum(['nxdomain', 'sinkhole']), 'nxdomain'),
  sinkhole_address: z.optional(z.string().check(z.refine((s: string) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address'))),
  unbound_control: z._default(argv, ['unbound-control']),
  unbound_conf_file: z._default(nonEmpty(), '/etc/unbound/wcf-agent/blocks.conf'),
  rpz_file: z.optional(nonEmpty()),
  rpz_reload: z.optional(argv),
  dnsmasq_file: z._default(nonEmpty(), '/var/lib/wcf-agent-dnsmasq/servers.conf'),
  dnsmasq_reload: z.optional(argv),
};

/** Checks across the keys above, as `path: message` issues. */
export function checkDnsConfig(
  c: { dns_action: string; sinkhole_address?: string | undefined; dns_plugin: string; rpz_file?: string | undefined; dnsmasq_reload?: readonly string[] | undefined },
  ctx: Pick<z.core.$RefinementCtx, 'addIssue'>,
): void {
  if (c.dns_action === 'sinkhole' && c.sinkhole_address === undefined) {
    ctx.addIssue({ code: 'custom', path: ['sinkhole_address'], message: 'required when dns_action is "sinkhole"' });
  }
  if (c.dns_plugin === 'rpz' && c.rpz_file === undefined) {
    ctx.addIssue({ code: 'custom', path: ['rpz_file'], message: 'required when dns_plugin is "rpz"' });
  }
  if (c.dns_plugin === 'dnsmasq') {
    // dnsmasq never looks at its servers-file again on its own: without the signal the blocks wait for its next restart.
    if (c.dnsmasq_reload === undefined) {
      ctx.addIssue({ code: 'custom', path: ['dnsmasq_reload'], message: 'required when dns_plugin is "dnsmasq" (the command that sends dnsmasq SIGHUP, e.g. ["systemctl","kill","-s","HUP","dnsmasq"])' });
    }
    // A servers-file holds only server= lines (a name and its subdomains answered locally, i.e.
    // NXDOMAIN); an address for a name and its subdomains (address=) is read only at a restart,
    // and addn-hosts, which SIGHUP re-reads, answers exact names only: www.NAME would not get the sinkhole.
    if (c.dns_action === 'sinkhole') {
      ctx.addIssue({
        code: 'custom',
        path: ['dns_action'],
        message: 'dnsmasq cannot give a blocked name\'s subdomains the sinkhole address from a file it re-reads (addn-hosts covers exact names only): use "nxdomain" with dnsmasq, or dns_plugin "unbound" or "rpz" for a sinkhole',
      });
    }
  }
}
