import type { AgentConfig } from '../../config/load.js';
import type { Settings } from '../../config/server.js';
import type { ThreatIntelApi } from '../../api/threat-intel.js';
import { FEED_FILTER } from '../../api/wire.js';
import { feedItemCap, pullFeed } from '../../feed/pull.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import type { Logger } from '../../log.js';
import { rebaseOnDecisions, sameDecisions } from '../../policy/decisions-rebase.js';
import type { SelectedEntry } from '../../policy/types.js';
import { loadDecisionsCache, saveDecisionsCache } from '../state/decisions-cache.js';
import { applyLocal } from '../cycle/overrides-apply.js';
import { localProtectedSet } from '../cycle/protect-applied.js';
import type { StateStore } from '../state/store.js';

export interface DecisionPollDeps {
  config: AgentConfig;
  api: ThreatIntelApi;
  state: StateStore;
  plugin: FirewallPlugin;
  logger: Logger;
  settings: Settings;
}

/**
 * One poll of the two manual-decision feeds (filter 2 blocks, filter 3
 * whitelist) between cycles. Pulled in full: a withdrawn decision leaves the
 * feed instead of coming back with a newer `ts`, so an incremental pull could
 * never see it, and both feeds are small. When they differ from what the last
 * cycle (or poll) applied, the last selection is rebased on them and applied
 * with the local overrides, through the protected set, without pulling the
 * score feed. The caller holds the agent lock; `write` runs the apply (the
 * daemon's writer: never held across the pull).
 * Answers the new base when something was applied, else undefined. `base` is asked for only
 * then (the daemon keeps it as columns: a million entries made into objects at every poll
 * would be hundreds of MB of garbage).
 */
export async function pollDecisions(
  deps: DecisionPollDeps,
  base: () => readonly SelectedEntry[],
  now: number,
  write: (job: () => Promise<SelectedEntry[]>) => Promise<SelectedEntry[] | undefined> = (job) => job(),
): Promise<SelectedEntry[] | undefined> {
  const { config, api, state, logger, settings } = deps;
  const previous = loadDecisionsCache(state.dir, logger);
  // Nothing to rebase on before the first successful cycle, which pulls the decisions itself.
  if (!previous) return undefined;
  const common = { fromTs: 0, pageSize: config.page_size, logger, now, maxItems: config.max_feed_items ?? feedItemCap(settings.maximum_rules, state.small.largestFeed) };
  const deadline = api.client.cycleDeadline;
  // Bounded like a cycle's calls, by the poll interval: a slow answer must not hold up the next cycle.
  deadline.start(Math.max(10, config.decision_poll_seconds) * 1000);
  let manual, white;
  try {
    [manual, white] = await Promise.all([pullFeed(api, { ...common, filter: FEED_FILTER.manualBlock }), pullFeed(api, { ...common, filter: FEED_FILTER.whitelist })]);
  } finally {
    deadline.stop();
  }
  if (sameDecisions(previous.manualBlocks, manual.items) && sameDecisions(previous.whitelist, white.items)) return undefined;
  return write(async () => {
    const protectedSet = await localProtectedSet(config, state, logger, { offline: true });
    const next = rebaseOnDecisions({
      base: base(),
      manualBlocks: manual.items.values(),
      whitelist: white.items.values(),
      protectedSet,
      minPrefix: config.min_prefix,
      maximumRules: settings.maximum_rules,
      now,
    });
    const r = await applyLocal(deps, next, now);
    // What plan --offline and the next poll compare against; the formula is the last cycle's.
    saveDecisionsCache(state.dir, { manualBlocks: manual.items, whitelist: white.items, header: previous.formulas }, previous.at);
    logger.info(
      { manual: manual.items.size, whitelist: white.items.size, applied: r.applied, added: r.apply?.added ?? 0, removed: r.apply?.removed ?? 0 },
      'manual decisions changed: applied without a full cycle',
    );
    return next;
  });
}
