import { isIP } from 'node:net';
import { z } from 'zod';
import { isDnsName } from '../feed/host.js';

/**
 * config.json keys of the URL feed and its resolver plugins, spread into the config
 * schema as one block. Names are lower-cased and lose a trailing dot here, once.
 */
const dnsName = z
  .string()
  .transform((s) => s.trim().toLowerCase().replace(/\.+$/, ''))
  .refine(isDnsName, 'must be a DNS name (letters, digits, - and _, labels of 1..63 characters)');

const argv = z.array(z.string().min(1)).min(1);

export const DNS_LIMITS = { maximum_domains: 2_000_000, url_score_threshold: 1_000_000 } as const;

export const dnsConfigKeys = {
  url_feed: z.boolean().default(false),
  dns_plugin: z.enum(['unbound', 'rpz', 'dry-run']).default('unbound'),
  // Default: the score_threshold in force (from the server's stored configuration or the local default).
  url_score_threshold: z.number().int().min(1).max(DNS_LIMITS.url_score_threshold).optional(),
  maximum_domains: z.number().int().min(1).max(DNS_LIMITS.maximum_domains).default(100_000),
  domain_allowlist: z.array(dnsName).default([]),
  shared_domains: z.array(dnsName).default([]),
  dns_action: z.enum(['nxdomain', 'sinkhole']).default('nxdomain'),
  sinkhole_address: z.string().refine((s) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address').optional(),
  unbound_control: argv.default(['unbound-control']),
  unbound_conf_file: z.string().min(1).default('/etc/unbound/wcf-agent/blocks.conf'),
  rpz_file: z.string().min(1).optional(),
  rpz_reload: argv.optional(),
};

/** Checks across the keys above, as `path: message` issues. */
export function checkDnsConfig(c: { dns_action: string; sinkhole_address?: string | undefined; dns_plugin: string; rpz_file?: string | undefined }, ctx: z.RefinementCtx): void {
  if (c.dns_action === 'sinkhole' && c.sinkhole_address === undefined) {
    ctx.addIssue({ code: 'custom', path: ['sinkhole_address'], message: 'required when dns_action is "sinkhole"' });
  }
  if (c.dns_plugin === 'rpz' && c.rpz_file === undefined) {
    ctx.addIssue({ code: 'custom', path: ['rpz_file'], message: 'required when dns_plugin is "rpz"' });
  }
}
