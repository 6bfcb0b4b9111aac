import type { AgentConfig } from '../../../config/load.js';
import type { Settings } from '../../../config/server.js';
import { GuardError } from '../../../errors.js';
import type { ApiClient } from '../../../api/client.js';
import { UrlApi } from '../../../api/url-api.js';
import { createDnsPlugin, dnsOwnedFiles, type DnsApplyResult } from '../../../dns/index.js';
import { hostDomainPolicy } from '../../../host/domain-policy.js';
import type { UrlCache } from '../../../feed/url-cache.js';
import { pullUrls } from '../../../feed/url-pull.js';
import type { Logger } from '../../../log.js';
import type { DomainPolicy } from '../../../policy/domain-policy.js';
import { selectDomains, type DomainReason, type DomainSelection } from '../../../policy/domains.js';
import type { Scoring } from '../../../score/decay.js';
import { DnsStateStore } from '../../state/url-feed-state.js';
import { recordLeftAlone } from './left-alone.js';
import { checkShrink } from '../shrink-guard.js';
import { namesHistory, recordNames } from './names-history.js';

/** What a cycle learnt from the URL feed, and what it would enforce. */
export interface DnsPlan {
  selection: DomainSelection;
  threshold: number;
  maximumDomains: number;
  urls: number;
  invalidUrls: number;
  full: boolean;
  cursor: number;
  pages: number;
  /** The merged cache, kept until the cycle persists it. */
  cache: UrlCache;
  /** Where the names go: the configured backend and the files it writes. */
  resolver: { plugin: string; files: string[] };
  /** The never-block rules the selection used, which the resolver's last filter applies too. */
  policy: DomainPolicy;
}

export interface UrlPullStarted {
  result: Promise<{ cache: UrlCache; cursor: number; full: boolean; pages: number }>;
}

/**
 * Start pulling the URL feed (when `url_feed` is on): incremental from the saved cursor
 * into the cached URLs when `useCache` and the full re-pull is not due, else full.
 * Runs beside the IPv4 pulls; nothing is written.
 */
export function startUrlPull(o: { config: AgentConfig; client: ApiClient; logger: Logger; now: number; useCache: boolean }): UrlPullStarted | undefined {
  const { config, logger, now } = o;
  if (!config.url_feed) return undefined;
  const store = new DnsStateStore(config.state_dir, logger);
  const small = store.small;
  const fullDue = small.lastFullPullAt === undefined || config.full_resync_hours === 0 || now - small.lastFullPullAt >= config.full_resync_hours * 3600;
  const cached = o.useCache && !fullDue && small.cursor !== undefined ? store.loadUrlCache() : undefined;
  const fromTs = cached ? small.cursor! : 0;
  const result = pullUrls(new UrlApi(o.client), { fromTs, logger }).then((r) => {
    if (!cached) return { cache: r.urls, cursor: r.cursor, full: true, pages: r.pages };
    cached.merge(r.urls);
    return { cache: cached, cursor: Math.max(r.cursor, fromTs), full: false, pages: r.pages };
  });
  result.catch(() => undefined); // awaited by finishDnsPlan; not unhandled if the IPv4 pull fails first
  return { result };
}

/** Select the names (and IPv4-literal hosts) once the scoring is known (the URL feed carries no formula). */
export async function finishDnsPlan(started: UrlPullStarted | undefined, o: { config: AgentConfig; logger: Logger; settings: Settings; scoring: Scoring; now: number }): Promise<DnsPlan | undefined> {
  if (!started) return undefined;
  const pulled = await started.result;
  const threshold = o.config.url_score_threshold ?? o.settings.score_threshold;
  const policy = hostDomainPolicy(o.config, o.logger);
  const selection = selectDomains({
    now: o.now,
    urls: pulled.cache,
    scoring: o.scoring,
    threshold,
    maximumDomains: o.config.maximum_domains,
    policy,
  });
  const resolver = { plugin: o.config.dns_plugin, files: dnsOwnedFiles(o.config) };
  return { selection, threshold, maximumDomains: o.config.maximum_domains, urls: pulled.cache.size, invalidUrls: pulled.cache.invalid, full: pulled.full, cursor: pulled.cursor, pages: pulled.pages, cache: pulled.cache, resolver, policy };
}

export interface DnsStepRecord {
  plugin: string;
  applied: number;
  byReason: Record<DomainReason, number>;
  result?: DnsApplyResult;
}

function byReason(plan: DnsPlan): Record<DomainReason, number> {
  const out: Record<DomainReason, number> = { manual: 0, score: 0 };
  for (const d of plan.selection.domains) out[d.reason]++;
  return out;
}

/**
 * The DNS part of a cycle, after the firewall's: keep what the URL pull learnt, then
 * apply the names (or flush them when `running` is off). The shrink guard covers the
 * name set as it covers the firewall's. Throws (GuardError, DnsError, StateError) with the
 * previous DNS state left in force.
 */
export async function applyDnsStep(
  o: { config: AgentConfig; logger: Logger; dryRun: boolean; force?: boolean; now: number },
  plan: DnsPlan,
  running: boolean,
): Promise<DnsStepRecord> {
  const store = new DnsStateStore(o.config.state_dir, o.logger);
  store.saveUrlCache(plan.cache);
  const s = plan.selection;
  store.update({
    cursor: plan.cursor,
    ...(plan.full ? { lastFullPullAt: o.now } : {}),
    lastSelection: { ts: o.now, hosts: s.hosts, skipped: s.skipped, addresses: s.addresses.length },
  });
  const plugin = createDnsPlugin(o.config, { logger: o.logger, dryRun: o.dryRun, policy: plan.policy });
  await flushPreviousDnsPlugin(o, store, plugin.name, plan.policy);
  const key = plugin.name === 'dry-run' ? 'dryRunApplied' : 'applied';
  const history = namesHistory(o.config, o.logger, plugin.name);
  if (!running) {
    await recordNames(history, plugin, { now: o.now, cause: 'cycle', all: 'running_off' }, () => plugin.flush());
    if (plugin.name !== 'dry-run') recordLeftAlone(store, o.logger, plugin.name, []);
    store.update({ [key]: { ts: o.now, plugin: plugin.name, names: 0, byReason: { manual: 0, score: 0 } } });
    return { plugin: plugin.name, applied: 0, byReason: { manual: 0, score: 0 } };
  }
  const names = s.domains.map((d) => d.name);
  const last = store.small[key];
  const previous = last?.plugin === plugin.name ? last.names : 0;
  const verdict = o.force ? { allow: true, pending: undefined } : checkShrink(previous, names.length, o.config.shrink_guard_ratio, store.small.pendingShrink, o.now);
  store.update({ pendingShrink: verdict.pending });
  if (!verdict.allow) throw new GuardError(`names: ${verdict.message!}`);
  if ('message' in verdict && verdict.message) o.logger.warn(`names: ${verdict.message}`);
  const result = await recordNames(history, plugin, { now: o.now, cause: 'cycle', plan }, () => plugin.apply(names));
  if (plugin.name !== 'dry-run') recordLeftAlone(store, o.logger, plugin.name, result.leftAlone);
  const counts = byReason(plan);
  store.update({ [key]: { ts: o.now, plugin: plugin.name, names: result.total, byReason: counts } });
  o.logger.info({ plugin: plugin.name, added: result.added, removed: result.removed, total: result.total }, 'resolver blocks applied');
  return { plugin: plugin.name, applied: result.total, byReason: counts, result };
}

/**
 * When dns_plugin changed from one resolver backend to another, the names the previous one
 * applied are removed first (with the files configured now), so no blocks are left behind
 * where nothing will ever update them. A failure is logged and retried next cycle.
 */
async function flushPreviousDnsPlugin(o: { config: AgentConfig; logger: Logger; now: number }, store: DnsStateStore, current: string, policy: DomainPolicy): Promise<void> {
  const prev = store.small.applied;
  // A dry run never touches a resolver, and keeps its own record (dryRunApplied).
  if (current === 'dry-run' || !prev || prev.plugin === current || prev.names === 0 || (prev.plugin !== 'unbound' && prev.plugin !== 'rpz' && prev.plugin !== 'dnsmasq')) return;
  if (prev.plugin === 'rpz' && !o.config.rpz_file) {
    o.logger.warn('dns_plugin changed from rpz and rpz_file is no longer set: empty the old zone file by hand');
    return;
  }
  try {
    const old = createDnsPlugin(o.config, { logger: o.logger, dryRun: false, only: prev.plugin, policy });
    await recordNames(namesHistory(o.config, o.logger, old.name), old, { now: o.now, cause: 'flush', all: 'backend_changed' }, () => old.flush());
    o.logger.info({ previous: prev.plugin, now: current }, 'dns_plugin changed: removed the names the previous resolver backend applied');
    store.update({ applied: { ts: o.now, plugin: prev.plugin, names: 0, byReason: { manual: 0, score: 0 } } });
  } catch (err) {
    o.logger.warn({ previous: prev.plugin }, `dns_plugin changed, but the previous backend's names could not be removed (retried next cycle): ${(err as Error).message}`);
  }
}

/** `flush`: remove the agent's names from the resolver (when `url_feed` is on), and nothing else. */
export async function flushDns(o: { config: AgentConfig; logger: Logger; dryRun: boolean; now: number }): Promise<string | undefined> {
  if (!o.config.url_feed) return undefined;
  const plugin = createDnsPlugin(o.config, { logger: o.logger, dryRun: o.dryRun, policy: hostDomainPolicy(o.config, o.logger) });
  await recordNames(namesHistory(o.config, o.logger, plugin.name), plugin, { now: o.now, cause: 'flush', all: 'flushed' }, () => plugin.flush());
  const dryRun = plugin.name === 'dry-run';
  new DnsStateStore(o.config.state_dir, o.logger).update({
    [dryRun ? 'dryRunApplied' : 'applied']: { ts: o.now, plugin: plugin.name, names: 0, byReason: { manual: 0, score: 0 } },
    pendingShrink: undefined,
    // Nothing of the agent's is at the resolver any more, so nothing is left alone either.
    ...(dryRun ? {} : { leftAlone: undefined }),
  });
  return plugin.name;
}
