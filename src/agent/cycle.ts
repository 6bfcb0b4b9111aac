import { hostname } from 'node:os';
import { ApiUnreachableError, GuardError, ServerConfigError, WcfError, errorMessage, reportCodeOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { AgentConfig } from '../config/load.js';
import { LOCAL_DEFAULT_SOURCES, resolveSettings, type Settings, type SettingSources } from '../config/server.js';
import type { ThreatIntelApi } from '../api/threat-intel.js';
import type { StateReport } from '../api/wire.js';
import type { FirewallEntry, FirewallPlugin, ApplyResult } from '../firewall/types.js';
import { createScoring, type Scoring } from '../score/decay.js';
import { selectEntries, type Reason, type Selection } from '../policy/select.js';
import { AGENT_VERSION } from '../version.js';
import { pullAll, type PulledFeeds } from './pull-all.js';
import { protectedNetworks } from './protected.js';
import type { AppliedSet, CycleRecord, StateStore } from './state.js';
import { checkShrink } from './guard.js';
import { PhaseClock, type PhaseTimings } from './timings.js';
import { applyDnsStep, finishDnsPlan, startUrlPull, type DnsPlan, type DnsStepRecord } from './dns-step.js';

export interface CycleDeps {
  config: AgentConfig;
  api: ThreatIntelApi;
  state: StateStore;
  logger: Logger;
  /** Epoch seconds. */
  now?: () => number;
  onProgress?: (what: string, pages: number, items: number) => void;
  /** Skip the shrink guard (an operator's explicit `sync --once --force`). */
  force?: boolean;
  /** Receives the time of each phase (runCycle passes one; optional for computePlan's other callers). */
  clock?: PhaseClock;
  /** Told whether the agent record exists as soon as E7 answers (before the pull, which may still fail). */
  onAgentRecord?: (status: 'present' | 'deleted') => void;
}

export interface PlanResult {
  now: number;
  settings: Settings;
  sources: SettingSources;
  agentRecord: 'present' | 'deleted';
  scoring: Scoring['source'];
  selection: Selection;
  pulled: Pick<PulledFeeds, 'full' | 'cursor' | 'pages' | 'invalid'> & { feed: number; manual: number; whitelist: number };
  settingProblems: string[];
  /** The URL feed's part (names for the resolver), when `url_feed` is on. */
  dns?: DnsPlan | undefined;
}

export interface CycleOutcome {
  record: CycleRecord;
  plan?: PlanResult;
  apply?: ApplyResult;
  error?: WcfError | Error;
  reported: boolean;
  /**
   * Milliseconds per phase: config (E7), pull (feed cache read + pulls + merge), select (decay,
   * selection), cache (feed cache and state writes), apply (shrink guard + firewall), save
   * (applied-<plugin>.json), report; `failed` for the phase that threw.
   */
  timings?: PhaseTimings;
  /** What the DNS step applied (when `url_feed` is on and it ran). */
  dns?: DnsStepRecord | undefined;
}

const rejectedFormulas = new Set<string>();

function epochNow(): number {
  return Math.floor(Date.now() / 1000);
}

export function localSettings(config: AgentConfig): Settings {
  return {
    maximum_rules: config.maximum_rules,
    score_threshold: config.score_threshold,
    sync_time: config.sync_time,
    running: true,
    version: null,
  };
}

/** Settings in force before this cycle: the last ones stored, else the local defaults. */
export function previousSettings(deps: Pick<CycleDeps, 'config' | 'state'>): { settings: Settings; sources: SettingSources } {
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
export async function computePlan(deps: CycleDeps, useCache: boolean): Promise<PlanResult & { feeds: PulledFeeds }> {
  const { config, api, state, logger } = deps;
  const now = (deps.now ?? epochNow)();
  const prev = previousSettings(deps);

  const recordP = api.agent(config.agid);
  // Independent of the API calls, so looked up while they run rather than after the pull (with
  // `netns` it runs an `ip` process; a host name in base_url is a DNS lookup). Awaited at the selection.
  const protectedNets = protectedNetworks(config.allowlist, config.base_url, logger, config.netns);
  protectedNets.catch(() => undefined); // not unhandled when the pull fails first
  const record = await recordP;
  deps.clock?.lap('config');
  deps.onAgentRecord?.(record === null ? 'deleted' : 'present');
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
    const fullDue = small.lastFullPullAt === undefined || config.full_resync_hours === 0 || now - small.lastFullPullAt >= config.full_resync_hours * 3600;
    const items = !fullDue && small.cursor !== undefined ? state.loadFeedCache() : undefined;
    if (items && small.cursor !== undefined) cache = { items, cursor: small.cursor };
  }

  const urlPull = startUrlPull({ config, client: api.client, logger, now, useCache });
  const feeds = await pullAll({ api, logger, pageSize: config.page_size, cache, onProgress: deps.onProgress });
  deps.clock?.lap('pull');
  const scoring = createScoring(feeds.header ?? {}, (field, error) => {
    const key = `${field}\u0000${error}`;
    if (rejectedFormulas.has(key)) return;
    rejectedFormulas.add(key);
    logger.warn({ field: `header.${field}`, error }, 'feed formula rejected; using the built-in decay formula');
  });
  const dns = await finishDnsPlan(urlPull, { config, settings: resolved.settings, scoring, now });
  const selection = selectEntries({
    now,
    feed: feeds.feed,
    manualBlocks: feeds.manualBlocks.values(),
    whitelist: feeds.whitelist.values(),
    protectedNets: await protectedNets,
    minPrefix: config.min_prefix,
    threshold: resolved.settings.score_threshold,
    maximumRules: resolved.settings.maximum_rules,
    scoring,
    urlAddresses: dns?.selection.addresses,
  });
  deps.clock?.lap('select');
  return {
    now,
    settings: resolved.settings,
    sources: resolved.sources,
    agentRecord: record === null ? 'deleted' : 'present',
    scoring: scoring.source,
    selection,
    settingProblems: resolved.problems,
    dns,
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

/** Seconds of kernel timeout for an entry: floor, so it leaves no later than its expiry. */
export function toFirewallEntries(selection: Selection, now: number): FirewallEntry[] {
  return selection.entries.map((e) => ({
    cidr: e.cidr.text,
    timeoutSeconds: e.expiresAt === null ? undefined : Math.max(1, Math.floor(e.expiresAt - now)),
    parsed: e.cidr,
  }));
}

/** Entries of an applied set that have not expired by `now`. */
export function liveEntries(set: AppliedSet | undefined, now: number): AppliedSet['entries'] {
  return (set?.entries ?? []).filter((e) => e.expiresAt === null || e.expiresAt > now);
}

function countByReason(entries: readonly { reason: Reason }[]): Record<Reason, number> {
  const out: Record<Reason, number> = { manual: 0, url: 0, score: 0 };
  for (const e of entries) out[e.reason]++;
  return out;
}

/**
 * Keep what a successful pull learnt, even if the apply then fails (it is not firewall
 * state): the feed cache (unless an incremental pull brought nothing), the cursor and the
 * settings in force. Answers the plan without the feed.
 */
function persistPull({ feeds, ...plan }: PlanResult & { feeds: PulledFeeds }, state: StateStore, now: number): { plan: PlanResult; fullPull: boolean } {
  if (feeds.feedChanged) state.saveFeedCache(feeds.feed);
  state.update({
    cursor: feeds.cursor,
    settings: plan.settings,
    sources: plan.sources,
    ...(feeds.full ? { lastFullPullAt: now } : {}),
  });
  return { plan, fullPull: feeds.full };
}

/**
 * One sync cycle: pull, select, apply, persist, report. A failed pull or apply
 * leaves the previously applied set in place; the error is reported with a
 * non-zero `code` when the report call can get through.
 */
export async function runCycle(deps: CycleDeps, plugin: FirewallPlugin): Promise<CycleOutcome> {
  const { config, state, logger } = deps;
  const started = Date.now();
  const clock = new PhaseClock();
  const now = (deps.now ?? epochNow)();
  const prev = previousSettings(deps);
  const emptyCounts = { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 };
  let plan: PlanResult | undefined;
  let fullPull = false;
  let apply: ApplyResult | undefined;
  let error: WcfError | Error | undefined;
  let appliedEntries: { cidr: string; reason: Reason; expiresAt: number | null }[] | undefined;
  let agentRecord: 'present' | 'deleted' | undefined;
  let dns: DnsStepRecord | undefined;

  // The firewall's current state is read while the API calls run (read-only; see FirewallPlugin.prefetch).
  plugin.prefetch?.();
  try {
    // The feed itself (tens of MB at a million indicators) stays inside persistPull: it is
    // collectable before the apply allocates, which is where a cycle's memory peaks.
    const pulled = persistPull(await computePlan({ ...deps, now: () => now, clock, onAgentRecord: (s) => (agentRecord = s) }, true), state, now);
    plan = pulled.plan;
    fullPull = pulled.fullPull;
    clock.lap('cache');

    if (plan.settings.running) {
      const before = liveEntries(state.loadApplied(plugin.name), now).length;
      const verdict = deps.force
        ? { allow: true, pending: undefined }
        : checkShrink(before, plan.selection.entries.length, config.shrink_guard_ratio, state.small.pendingShrink, now);
      state.update({ pendingShrink: verdict.pending });
      if (!verdict.allow) throw new GuardError(verdict.message!);
      if ('message' in verdict && verdict.message) logger.warn(verdict.message);
      // On the clock of the apply, not of the cycle's start: the kernel counts timeouts from when
      // the entries go in (counted from the start, a long pull made every expiry that much late,
      // and the next cycle saw every timeout as changed), and an entry whose expiry passed during
      // the pull is left out (the kernel would drop it within the second anyway).
      const applyAt = (deps.now ?? epochNow)();
      const selected = { ...plan.selection, entries: plan.selection.entries.filter((e) => e.expiresAt === null || e.expiresAt > applyAt) };
      apply = await plugin.apply(toFirewallEntries(selected, applyAt));
      appliedEntries = selected.entries.map((e) => ({ cidr: e.cidr.text, reason: e.reason, expiresAt: e.expiresAt }));
      for (const what of apply.repaired) logger.warn({ repaired: what }, `firewall object was missing and has been re-created: ${what}`);
    } else {
      logger.info('running is disabled in the stored configuration: removing the agent rules, still syncing and reporting');
      await plugin.flush();
      appliedEntries = [];
    }
    clock.lap('apply');
    state.saveApplied({ ts: now, plugin: plugin.name, entries: appliedEntries });
    clock.lap('save');
    dns = await applyDnsStep({ config, logger, dryRun: plugin.name === 'dry-run', force: deps.force, now }, plan.dns, plan.settings.running);
    clock.lap('dns');
    if (plan.settingProblems.length) error = new ServerConfigError(plan.settingProblems);
  } catch (err) {
    clock.lap('failed'); // the phase that threw, so its time is not charged to the report
    error = err instanceof Error ? err : new Error(String(err));
    logger.error({ code: (error as WcfError).code ?? 'internal' }, `sync failed, previous firewall state kept: ${errorMessage(error)}`);
  }

  const settings = plan?.settings ?? prev.settings;
  // A server-config problem or a held-back shrink still leaves a protected, consistent host.
  const ok = error === undefined || error instanceof ServerConfigError || error instanceof GuardError;
  const current = appliedEntries ?? liveEntries(state.loadApplied(plugin.name), now);
  const record: CycleRecord = {
    ts: now,
    ok,
    code: error ? reportCodeOf(error) : 0,
    errorCode: (error as WcfError | undefined)?.code,
    message: error ? errorMessage(error) : undefined,
    durationMs: Date.now() - started,
    plugin: plugin.name,
    applied: current.length,
    byReason: countByReason(current),
    skipped: plan?.selection.skipped ?? emptyCounts,
    fullPull,
    running: settings.running,
  };
  state.update({ lastCycle: record, ...(ok ? { lastSuccessAt: now } : {}) });

  const report: StateReport = {
    agid: config.agid,
    hostanme: hostname(),
    plugin: plugin.name,
    code: record.code,
    blacklist: current.map((e) => e.cidr),
    maximum_rules: settings.maximum_rules,
    score_threshold: settings.score_threshold,
    sync_time: String(settings.sync_time),
    ts: now,
    version: AGENT_VERSION,
  };
  let reported = false;
  if (agentRecord === 'deleted') {
    logger.info('not reporting: the agent record is deleted and the agent does not re-create it');
  } else if (error instanceof ApiUnreachableError && deps.api.client.aborted) {
    logger.info('not reporting: the agent is stopping');
  } else {
    try {
      reported = await deps.api.report(report, { retry: error === undefined });
      if (!reported) logger.warn('the server has no record for this agent; report not stored');
    } catch (err) {
      logger.warn({ code: (err as WcfError).code }, `state report failed: ${errorMessage(err)}`);
    }
  }
  clock.lap('report');
  logger.debug({ timings: clock.ms }, 'cycle phase timings (ms)');
  return { record, plan, apply, error, reported, timings: clock.ms, dns };
}
