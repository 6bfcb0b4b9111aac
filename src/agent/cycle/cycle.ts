import { recordHits } from './hit-watch.js';
import { ApiUnreachableError, NotOwnedError, ServerConfigError, WcfError, errorMessage } from '../../errors.js';
import type { AgentConfig } from '../../config/load.js';
import { localSettings } from '../../config/local-settings.js';
import { LOCAL_DEFAULT_SOURCES, resolveSettings, type Settings, type SettingSources } from '../../config/server.js';
import type { ApplyResult, FirewallPlugin } from '../../firewall/index.js';
import { createScoring } from '../../score/decay.js';
import { selectEntries } from '../../policy/select.js';
import { selectionWithOverrides } from './overrides-apply.js';
import { AGENT_VERSION } from '../../version.js';
import { recordCycle, reportCycle } from './report.js';
import { enforcePlan } from './enforce.js';
import { liveColumns, type AppliedList } from '../state/applied-columns.js';
import { pullAll, type PulledFeeds } from './pull-all.js';
import { feedItemCap } from '../../feed/pull.js';
import { localProtectedSet, rememberApiIn } from './protect-applied.js';
import { dropNewlyProtected } from './reapply.js';
import type { StateStore } from '../state/store.js';
import { checkAgentRecord, seenPatch } from './first-contact.js';
import { saveDecisionsCache } from '../state/decisions-cache.js';
import { saveFeedCacheAfterApply } from '../state/feed-cache-write.js';
import { PhaseClock } from './timings.js';
import { applyDnsStep, finishDnsPlan, startUrlPull, type DnsStepRecord } from './url-feed-front.js';
import { reassertMissing } from './reassert.js';
import { releaseAfterLargePull } from '../../util/release-memory.js';
import type { CycleDeps, CycleOutcome, PlanResult, PlanState } from './types.js';
import { cycleFacts } from './history-facts.js';

const rejectedFormulas = new Set<string>();

function epochNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** Settings in force before this cycle: the last ones stored, else the local defaults. */
export function previousSettings(deps: { config: AgentConfig; state: Pick<StateStore, 'small'> }): { settings: Settings; sources: SettingSources } {
  const s = deps.state.small;
  return {
    settings: s.settings ?? localSettings(deps.config),
    sources: s.sources ?? LOCAL_DEFAULT_SOURCES,
  };
}

/**
 * Pull and select; touches neither the firewall nor the state. `useCache`:
 * incremental from the cached feed where the cache is fresh enough.
 */

export async function computePlan(deps: Omit<CycleDeps, 'state'> & { state: PlanState }, useCache: boolean): Promise<PlanResult & { feeds: PulledFeeds }> {
  const { config, api, state, logger } = deps;
  const now = (deps.now ?? epochNow)();
  const prev = previousSettings(deps);

  const recordP = api.agent(config.agid);
  // Independent of the API calls, so looked up while they run rather than after the pull (with
  // `netns` it runs an `ip` process; a host name in base_url is a DNS lookup). Awaited at the selection.
  const protectedSet = deps.protectedSet ?? localProtectedSet(config, state, logger);
  protectedSet.catch(() => undefined); // not unhandled when the pull fails first
  const record = await recordP;
  deps.clock?.lap('config');
  deps.onAgentRecord?.(record === null ? 'deleted' : 'present');
  checkAgentRecord(record !== null, state, config.agid);
  if (record === null) {
    logger.warn({ agid: config.agid }, 'agent record not found on the server (deleted?); keeping the last known configuration');
  }
  const resolved = resolveSettings(record?.config, prev.settings, prev.sources);
  if (resolved.problems.length) logger.warn({ problems: resolved.problems }, 'stored configuration has invalid values; previous values kept');
  if (resolved.settings.version && resolved.settings.version !== AGENT_VERSION) {
    logger.info({ desired: resolved.settings.version, running: AGENT_VERSION }, 'the server asks for another agent version');
  }

  let cache: { items: ReturnType<StateStore['loadFeedCache']> & {}; cursor: number } | undefined;
  if (useCache) {
    const small = state.small;
    const fullDue = small.lastFullPullAt === undefined || small.lastFullPullAt > now || config.full_resync_hours === 0 || now - small.lastFullPullAt >= config.full_resync_hours * 3600;
    const items = !fullDue && small.cursor !== undefined ? state.loadFeedCache() : undefined;
    if (items && small.cursor !== undefined) cache = { items, cursor: small.cursor };
  }

  const maxItems = config.max_feed_items ?? feedItemCap(resolved.settings.maximum_rules, state.small.largestFeed);
  const urlPull = startUrlPull({ config, client: api.client, logger, now, useCache });
  const feeds = await pullAll({ api, logger, pageSize: config.page_size, cache, onProgress: deps.onProgress, maxItems, now });
  deps.clock?.lap('pull');
  deps.afterPull?.(feeds);
  const scoring = createScoring(feeds.header ?? {}, (field, error) => {
    const key = `${field}\u0000${error}`;
    if (rejectedFormulas.has(key)) return;
    rejectedFormulas.add(key);
    logger.warn({ field: `header.${field}`, error }, 'feed formula rejected; using the built-in decay formula');
  });
  const dns = await finishDnsPlan(urlPull, { config, logger, settings: resolved.settings, scoring, now });
  const ps = await protectedSet;
  const selected = selectEntries({
    now,
    feed: feeds.feed,
    manualBlocks: feeds.manualBlocks.values(),
    whitelist: feeds.whitelist.values(),
    protectedSet: ps,
    minPrefix: config.min_prefix,
    threshold: resolved.settings.score_threshold,
    maximumRules: resolved.settings.maximum_rules,
    scoring,
    urlAddresses: dns?.selection.addresses,
    explainFor: deps.explainFor,
  });
  const { selection, base } = deps.overridesAtApply
    ? { selection: selected, base: selected.columns }
    : selectionWithOverrides(selected, { config, protectedSet: ps, maximumRules: resolved.settings.maximum_rules, now, logger });
  // The feed is only read whole from here on (the cache file): no spare room, no hash slots.
  feeds.feed.compact();
  deps.clock?.lap('select');
  return {
    now,
    settings: resolved.settings,
    sources: resolved.sources,
    agentRecord: record === null ? 'deleted' : 'present',
    scoring: scoring.source,
    selection,
    base,
    settingProblems: resolved.problems,
    dns,
    leaving: cycleFacts({ feeds, scoring, threshold: resolved.settings.score_threshold, protectedSet: ps, minPrefix: config.min_prefix, cut: selected.cut, scoredAt: now }),
    pulled: {
      full: feeds.full,
      cursor: feeds.cursor,
      pages: feeds.pages,
      invalid: feeds.invalid,
      feed: feeds.feed.size,
      manual: feeds.manualBlocks.size,
      whitelist: feeds.whitelist.size,
    },
    feeds,
  };
}

/**
 * Keep what a successful pull learnt, even if the apply then fails (it is not firewall
 * state): the settings in force now, and `saveCache` for the feed cache (unless an
 * incremental pull brought nothing) with its cursor, which the cycle calls after the apply
 * and the applied-set record: the cache is only a speed-up, and on a full disk it must
 * neither stop the apply nor take the space the applied set (needed for restore) needs.
 */
function persistPull({ feeds, ...plan }: PlanResult & { feeds: PulledFeeds }, state: StateStore, now: number): { plan: PlanResult; fullPull: boolean; saveCache: () => void } {
  state.update({ settings: plan.settings, sources: plan.sources, ...seenPatch(plan.agentRecord === 'present', state, now) });
  const saveCache = () => {
    try {
      if (feeds.feedChanged) state.saveFeedCache(feeds.feed);
    } finally {
      // Nothing reads the feed after this: its columns (30 MB at a million) are freed before the report.
      feeds.feed.release();
    }
    saveDecisionsCache(state.dir, feeds, now); // for `plan --offline`
    // The cursor moves only with the cache it belongs to.
    state.update({ cursor: feeds.cursor, ...(feeds.full ? { lastFullPullAt: now } : {}) });
  };
  return { plan, fullPull: feeds.full, saveCache };
}

/** The cycle's apply result, with what the re-assertion before the pull repaired in front. */
function mergeRepairs(reassert: ApplyResult | undefined, apply: ApplyResult | undefined): ApplyResult | undefined {
  if (!reassert) return apply;
  if (!apply) return reassert;
  return { ...apply, repaired: [...reassert.repaired, ...apply.repaired] };
}

/**
 * One sync cycle: re-assert missing firewall objects, pull and select, persist what the pull learnt, enforce,
 * save the applied set, record, report. A failed pull or apply leaves the
 * previously applied set in place; the error is reported with a non-zero
 * `code` when the report call can get through. The outcome carries the
 * settings in force after the cycle.
 */
export async function runCycle(deps: CycleDeps, plugin: FirewallPlugin): Promise<CycleOutcome> {
  const { config, state, logger } = deps;
  const write = deps.write ?? (<T>(job: () => Promise<T>) => job());
  const started = Date.now();
  const clock = new PhaseClock();
  const now = (deps.now ?? epochNow)();
  let plan: PlanResult | undefined;
  let fullPull = false;
  let enforced: { apply?: ApplyResult; entries: AppliedList } | undefined;
  let error: WcfError | Error | undefined;
  let agentRecord: 'present' | 'deleted' | undefined;
  let saveCache: (() => void) | undefined;
  let dns: DnsStepRecord | undefined;

  // Computed without the API, so a cycle whose pull fails still has it (see dropNewlyProtected below).
  const protectedSet = localProtectedSet(config, state, logger, { rememberApi: rememberApiIn(state) });
  protectedSet.catch(() => undefined); // awaited by computePlan or below; not unhandled meanwhile
  // While the API calls run: the hit counters are read first (a re-created object starts from zero);
  // then missing hooks, chain/table or set are put back from the last applied set (through the
  // protected set), whatever the pull brings; then the kernel read for the apply (read-only; see
  // FirewallPlugin.prefetch). The apply below waits for all three.
  const reasserted = write(async () => {
    await recordHits(plugin, state, logger);
    return reassertMissing(plugin, state, previousSettings(deps).settings, protectedSet, logger, now);
  }).then((r) => {
    plugin.prefetch?.();
    return r;
  });
  try {
    const pulled = persistPull(
      await computePlan({ ...deps, now: () => now, clock, protectedSet, afterPull: releaseAfterLargePull, onAgentRecord: (s) => (agentRecord = s), overridesAtApply: true }, true),
      state,
      now,
    );
    ({ fullPull, saveCache } = pulled);
    plan = pulled.plan;
    clock.lap('cache');
    await reasserted;
    const ps = await protectedSet;
    // Stopping (SIGTERM during the pull or the selection, minutes at a million): no apply is begun.
    // The pull is kept in the feed cache, so the next start applies it without pulling it again.
    if (deps.api.client.aborted) throw new ApiUnreachableError('the agent is stopping: nothing applied, the pulled feed is kept for the next start');
    enforced = await write(() => enforcePlan(deps, plugin, pulled.plan, ps, now, clock, (ready) => (plan = ready)));
    const { dns: dnsPlan, settings: { running } } = pulled.plan;
    dns = await write(() => applyDnsStep({ config, logger, dryRun: plugin.name === 'dry-run', force: deps.force, now }, dnsPlan, running));
    clock.lap('dns');
    if (plan.settingProblems.length) error = new ServerConfigError(plan.settingProblems);
  } catch (err) {
    clock.lap('failed'); // the phase that threw, so its time is not charged to the report
    error = err instanceof Error ? err : new Error(String(err));
    // Refused, the agent wrote nothing; and what it kept is not in the kernel under these names.
    const said = error instanceof NotOwnedError ? 'sync refused, nothing written' : 'sync failed, previous firewall state kept';
    logger.error({ code: (error as WcfError).code ?? 'internal' }, `${said}: ${errorMessage(error)}`);
  }
  const reassert = await reasserted; // done even when the pull failed: that is its point
  const cacheError = saveFeedCacheAfterApply(saveCache, logger);
  saveCache = undefined; // the feed can be collected now
  clock.lap('cache');
  if (cacheError && (error === undefined || error instanceof ServerConfigError)) error = cacheError;

  const settings = plan?.settings ?? previousSettings(deps).settings;
  // Nothing applied this cycle: the kernel keeps the last set, minus what has become protected since.
  // (Not while the agent is stopping: that cycle ends as soon as it can.)
  if (enforced === undefined && settings.running && !deps.api.client.aborted) {
    await write(() => dropNewlyProtected(plugin, state, protectedSet, logger, now, settings.maximum_rules));
  }
  const current = enforced?.entries ?? liveColumns(state.loadAppliedColumns(plugin.name)?.columns, now);
  const record = recordCycle({ state, plugin: plugin.name, now, started, error, current, skipped: plan?.selection.skipped, fullPull, running: settings.running });
  const reported = await reportCycle(deps, { plugin: plugin.name, record, settings, current, now, error, agentRecord });
  clock.lap('report');
  logger.debug({ timings: clock.ms }, 'cycle phase timings (ms)');
  return { record, plan, settings, apply: mergeRepairs(reassert, enforced?.apply), error, reported, stateReport: state.small.report, timings: clock.ms, dns };
}
