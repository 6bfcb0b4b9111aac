import type { AgentConfig } from '../config/load.js';
import { StateError } from '../errors.js';
import type { Logger } from '../log.js';
import { selectEntries } from '../policy/select.js';
import { selectionWithOverrides } from './overrides-apply.js';
import { createScoring } from '../score/decay.js';
import { previousSettings, type PlanResult } from './cycle.js';
import { loadDecisionsCache } from './decisions-cache.js';
import { localProtectedSet } from './protect-applied.js';
import type { StateStore } from './state.js';

/**
 * `plan --offline`: what would be applied now, from what the last successful pull left in
 * `state_dir` (score feed cache, manual decisions, feed formulas, settings in force), with
 * no API call, for when the API is down. Touches nothing.
 */
export async function computeOfflinePlan(deps: { config: AgentConfig; state: StateStore; logger: Logger; now?: number }): Promise<{ plan: PlanResult; feedAsOf: number }> {
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
  const protectedSet = await localProtectedSet(config, state, logger);
  const selected = selectEntries({
    now,
    feed,
    manualBlocks: decisions.manualBlocks.values(),
    whitelist: decisions.whitelist.values(),
    protectedSet,
    minPrefix: config.min_prefix,
    threshold: prev.settings.score_threshold,
    maximumRules: prev.settings.maximum_rules,
    scoring,
  });
  const { selection, base } = selectionWithOverrides(selected, { config, protectedSet, maximumRules: prev.settings.maximum_rules, now, logger });
  return {
    feedAsOf: decisions.at,
    plan: {
      now,
      settings: prev.settings,
      sources: prev.sources,
      // Not asked offline; planToJson prints null for it.
      agentRecord: 'present',
      scoring: scoring.source,
      selection,
      base,
      settingProblems: [],
      pulled: {
        full: false,
        cursor: state.small.cursor ?? 0,
        pages: 0,
        invalid: 0,
        feed: feed.size,
        manual: decisions.manualBlocks.size,
        whitelist: decisions.whitelist.size,
      },
    },
  };
}
