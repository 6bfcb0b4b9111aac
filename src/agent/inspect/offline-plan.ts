import type { AgentConfig } from '../../config/load.js';
import { StateError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Indicator, IndicatorMap } from '../../feed/indicator.js';
import { selectEntries, type SelectionInput } from '../../policy/select.js';
import { createScoring, type Scoring } from '../../score/decay.js';
import { selectionWithOverrides } from '../cycle/overrides-apply.js';
import { previousSettings } from '../cycle/cycle.js';
import { type PlanResult } from '../cycle/types.js';
import { loadDecisionsCache } from '../state/decisions-cache.js';
import { localProtectedSet } from '../cycle/protect-applied.js';
import type { StateStore } from '../state/store.js';

/** What the last successful pull left in `state_dir`, as the selection's input. */
export interface OfflineInput {
  readonly input: SelectionInput & { readonly feed: IndicatorMap; readonly manualBlocks: Indicator[]; readonly whitelist: Indicator[] };
  readonly settings: ReturnType<typeof previousSettings>;
  readonly scoring: Scoring;
  /** Epoch s of the pull the caches come from. */
  readonly feedAsOf: number;
  readonly cursor: number;
}

/**
 * The selection input from the caches alone (score feed, manual decisions,
 * feed formulas, settings in force) and the protected set, with no API call.
 * Throws a StateError when nothing is cached yet.
 */
export async function loadOfflineInput(deps: { config: AgentConfig; state: StateStore; logger: Logger; now?: number }): Promise<OfflineInput> {
  const { config, state, logger } = deps;
  const now = deps.now ?? Math.floor(Date.now() / 1000);
  const decisions = loadDecisionsCache(state.dir, logger);
  const feed = decisions ? state.loadFeedCache() : undefined;
  if (!decisions || !feed) {
    throw new StateError(`no cached feed in ${state.dir} to plan from offline: a successful sync (or the daemon's cycle) writes it`);
  }
  const prev = previousSettings(deps);
  const scoring = createScoring(decisions.formulas, (field, error) =>
    logger.warn({ field: `header.${field}`, error }, 'feed formula rejected; using the built-in decay formula'),
  );
  return {
    settings: prev,
    scoring,
    feedAsOf: decisions.at,
    cursor: state.small.cursor ?? 0,
    input: {
      now,
      feed,
      manualBlocks: [...decisions.manualBlocks.values()],
      whitelist: [...decisions.whitelist.values()],
      protectedSet: await localProtectedSet(config, state, logger),
      minPrefix: config.min_prefix,
      threshold: prev.settings.score_threshold,
      maximumRules: prev.settings.maximum_rules,
      scoring,
    },
  };
}

/**
 * `plan --offline`: what would be applied now, from what the last successful pull left in
 * `state_dir` (score feed cache, manual decisions, feed formulas, settings in force), with
 * no API call, for when the API is down. Touches nothing.
 */
export async function computeOfflinePlan(deps: { config: AgentConfig; state: StateStore; logger: Logger; now?: number }): Promise<{ plan: PlanResult; feedAsOf: number }> {
  const { input, settings, scoring, feedAsOf, cursor } = await loadOfflineInput(deps);
  const { selection, base } = selectionWithOverrides(selectEntries(input), {
    config: deps.config,
    protectedSet: input.protectedSet,
    maximumRules: input.maximumRules,
    now: input.now,
    logger: deps.logger,
  });
  return {
    feedAsOf,
    plan: {
      now: input.now,
      settings: settings.settings,
      sources: settings.sources,
      // Not asked offline; planToJson prints null for it.
      agentRecord: 'present',
      scoring: scoring.source,
      selection,
      base,
      settingProblems: [],
      pulled: {
        full: false,
        cursor,
        pages: 0,
        invalid: 0,
        feed: input.feed.size,
        manual: input.manualBlocks.length,
        whitelist: input.whitelist.length,
      },
    },
  };
}
