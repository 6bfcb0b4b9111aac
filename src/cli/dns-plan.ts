import type { DnsPlan } from '../agent/cycle/url-feed-front.js';
import { duration, table } from './format.js';

/** The DNS part of `plan --json` / `sync --json`: null when `url_feed` is off. */
export function dnsPlanToJson(dns: DnsPlan | undefined, now: number) {
  if (!dns) return { domains: null, dns: null };
  const s = dns.selection;
  return {
    // Whole epoch seconds, as every time the CLI prints (a solved expiry carries a fraction).
    domains: s.domains.map((d) => {
      const expires = d.expiresAt === null ? null : Math.floor(d.expiresAt);
      return { name: d.name, reason: d.reason, score: d.score, expires, expires_in: expires === null ? null : expires - now, urls: d.urls };
    }),
    dns: {
      selected: s.domains.length,
      manual: s.domains.filter((d) => d.reason === 'manual').length,
      score: s.domains.filter((d) => d.reason === 'score').length,
      url_addresses: s.addresses.length,
      skipped: s.skipped,
      hosts: s.hosts,
      urls: dns.urls,
      invalid_urls: dns.invalidUrls,
      url_score_threshold: dns.threshold,
      maximum_domains: dns.maximumDomains,
      full_pull: dns.full,
      cursor: dns.cursor,
      plugin: dns.resolver.plugin,
      files: dns.resolver.files,
    },
  };
}

/** The names table of `plan` (text). */
export function printDomainsTable(dns: DnsPlan | undefined, now: number, limit: number): void {
  if (!dns) return;
  const s = dns.selection;
  const rows = s.domains.slice(0, limit).map((d) => [d.reason, d.name, d.score.toFixed(2), d.expiresAt === null ? 'never' : duration(d.expiresAt - now), String(d.urls)]);
  process.stdout.write('\n' + table(['reason', 'name', 'score now', 'expires in', 'urls'], rows, ['l', 'l', 'r', 'r', 'r']) + '\n');
  if (s.domains.length > limit) process.stdout.write(`... and ${s.domains.length - limit} more (use --json or --limit)\n`);
  const k = s.skipped;
  const manual = s.domains.filter((d) => d.reason === 'manual').length;
  process.stdout.write(
    `\n${s.domains.length} names (${manual} manual, ${s.domains.length - manual} score) of ${s.hosts} hosts in ${dns.urls} URLs; ${s.addresses.length} IPv4-literal URL hosts go to the firewall\n` +
      `url_score_threshold ${dns.threshold}, maximum_domains ${dns.maximumDomains}; at the resolver: ${dns.resolver.plugin}${dns.resolver.files.length ? ` (${dns.resolver.files.join(', ')})` : ''}\n` +
      `skipped: ${k.threshold} below threshold, ${k.cap} over the cap, ${k.whitelist} whitelisted, ${k.allowlist} allowlisted, ${k.public_suffix} public suffixes, ${k.shared_platform} shared platforms\n`,
  );
}
