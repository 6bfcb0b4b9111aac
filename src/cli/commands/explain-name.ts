import { previousSettings } from '../../agent/cycle/cycle.js';
import { DnsStateStore } from '../../agent/state/url-feed-state.js';
import { UsageError } from '../../errors.js';
import { normaliseName } from '../../feed/host.js';
import { UrlCache } from '../../feed/url-cache.js';
import { hostDomainPolicy } from '../../host/domain-policy.js';
import type { KeptBy } from '../../policy/domain-policy.js';
import { selectDomains } from '../../policy/domains.js';
import { explainName, type NameVerdict } from '../../policy/explain-name.js';
import { createScoring } from '../../score/decay.js';
import { loadContext, openState, type GlobalOptions } from '../context.js';
import { duration, printJson } from '../format.js';
import { terminalSafe } from '../../util/terminal-text.js';
import { nameAtResolver, resolverLines } from '../dns-explain.js';

const MEANING: Record<NameVerdict['verdict'], string> = {
  manual: 'blocked: a blacklisted URL on this host',
  score: 'blocked: its best URL score is at or above url_score_threshold',
  covered: 'blocked: a blocked parent name covers it',
  allowlist: 'never blocked: domain_allowlist, or a name the agent itself needs (the API server, its proxy, a NO_PROXY name), or a parent of one',
  reverse_zone: 'never blocked: a reverse zone (in-addr.arpa, ip6.arpa), where the lookups of addresses go',
  special_use: 'never blocked: a special-use name (localhost, local, invalid, test, home.arpa, internal, onion, alt), never on the internet',
  cluster_domain: "never blocked: Kubernetes' cluster domain (cluster_domain), or a parent of it",
  search_domain: "never blocked: a search domain of the host's resolv.conf, or a parent of one",
  public_suffix: 'never blocked: a public suffix (Public Suffix List, private section included)',
  shared_platform: 'never blocked: a shared platform (shipped list or shared_domains)',
  whitelist: 'never blocked: the host has a whitelisted URL',
  threshold: 'not blocked: its best URL score is below url_score_threshold',
  cap: 'not blocked: over maximum_domains',
  not_in_feed: 'not blocked: no URL of the feed is on this host',
  ipv4: 'an IPv4 address: URLs on it go to the firewall (reason url); see `plan`',
  invalid: 'not a valid host name',
};

/** Which name a rule keeps, as `explain` says it (`the search domain corp.example (/etc/resolv.conf)`). */
function keptWhat(k: KeptBy): string {
  switch (k.rule) {
    case 'allowlist':
      if (k.source === 'domain_allowlist') return `${k.zone} of domain_allowlist`;
      if (k.source === 'base_url') return `the API server's host ${k.zone} (base_url)`;
      if (/^no_proxy$/i.test(k.source)) return `${k.zone} of ${k.source}, which the API client reaches without its proxy`;
      return `the proxy ${k.zone} (${k.source})`;
    case 'reverse_zone':
      return `the reverse zone ${k.zone}`;
    case 'special_use':
      return `the special-use name ${k.zone}`;
    case 'cluster_domain':
      return `Kubernetes' cluster domain ${k.zone} (cluster_domain)`;
    case 'search_domain':
      return `the search domain ${k.zone} (${k.source})`;
    case 'shared_platform':
      return `the shared platform ${k.zone} (${k.source})`;
    case 'public_suffix':
      return `the public suffix ${k.zone}`;
  }
}

/** The rule that keeps `name`, and how `name` stands to the name it protects. */
export function keptByText(name: string, k: KeptBy): string {
  const what = keptWhat(k);
  if (name === k.zone) return `it is ${what}`;
  if (name.endsWith(`.${k.zone}`)) return `it is under ${what}`;
  return `blocking it would block ${what} too`;
}

/**
 * `explain NAME|URL`: the verdict for a name from the URL feed as last pulled (state dir),
 * the configuration and the settings in force; no network, touches nothing. Scores use
 * the built-in decay formula (a formula published in a feed header is not kept).
 */
export async function explainNameCommand(target: string, opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const h = normaliseName(target);
  if (h.kind === 'invalid') throw new UsageError(`NAME|URL: ${JSON.stringify(terminalSafe(target, 100))}: ${h.error}`);
  const host = h.kind === 'ipv4' ? h.ip : h.name;
  const { config, logger } = loadContext(opts);
  const settings = previousSettings({ config, state: openState(config, logger) }).settings;
  const urls = new DnsStateStore(config.state_dir, logger).loadUrlCache();
  const now = Math.floor(Date.now() / 1000);
  const scoring = createScoring({}, () => undefined);
  const threshold = config.url_score_threshold ?? settings.score_threshold;
  const policy = hostDomainPolicy(config, logger);
  const selection = selectDomains({ now, urls: urls ?? new UrlCache(16), scoring, threshold, maximumDomains: config.maximum_domains, policy });
  const v = explainName(host, { selection, urls, policy, scoring, now, threshold });
  // The name that decides (a covered name's blocked parent), as the resolver backend holds it.
  const at = config.url_feed && h.kind === 'name' ? await nameAtResolver(config, logger, v.entry?.name ?? v.name, policy) : null;
  const blocked = v.blocked && !at?.left_alone;
  if (opts.json) {
    await printJson({
      name: v.name,
      verdict: v.verdict,
      blocked,
      by: v.entry && v.entry.name !== v.name ? v.entry.name : null,
      score: v.score,
      urls: v.urls,
      expires: v.entry?.expiresAt == null ? null : Math.floor(v.entry.expiresAt),
      kept_by: v.keptBy ? { rule: v.keptBy.rule, zone: v.keptBy.zone, source: v.keptBy.source } : null,
      url_feed: config.url_feed,
      feed_cached: urls !== undefined,
      resolver: at,
    });
    return 0;
  }
  const lines = [`${v.name}: ${v.verdict} (${MEANING[v.verdict]})`];
  if (v.entry && v.entry.name !== v.name) lines.push(`  covered by ${v.entry.name} (${v.entry.reason})`);
  if (v.keptBy && v.keptBy.rule !== 'public_suffix') lines.push(terminalSafe(`  kept by: ${keptByText(v.name, v.keptBy)}`, 1000));
  if (v.score !== null) lines.push(`  ${v.urls} URLs in the feed, best score now ${v.score.toFixed(2)} (threshold ${threshold})`);
  if (v.entry) lines.push(`  expires: ${v.entry.expiresAt === null ? 'never' : `in ${duration(v.entry.expiresAt - now)}`}`);
  if (at) lines.push(...resolverLines(at, v.entry !== undefined).map((l) => terminalSafe(l, 1000)));
  if (!config.url_feed) lines.push('  note: url_feed is off in config.json: nothing is blocked at the resolver');
  else if (!urls) lines.push('  note: no URL feed pulled yet (run a sync first)');
  process.stdout.write(lines.join('\n') + '\n');
  return 0;
}
