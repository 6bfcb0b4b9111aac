import type { AgentConfig } from '../../config/load.js';
import type { Settings } from '../../config/server.js';
import type { ThreatIntelApi } from '../../api/threat-intel.js';
import { FEED_FILTER, feedServerTime } from '../../api/wire.js';
import { feedItemCap, pullFeed } from '../../feed/pull.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import type { Logger } from '../../log.js';
import { rebaseOnDecisions, sameDecisions } from '../../policy/decisions-rebase.js';
import { RangeSet } from '../../net/ipv4.js';
import type { SelectedEntry } from '../../policy/types.js';
import { mergeDecisions } from '../../feed/decisions.js';
import { cursorLimit, newestTs, pollStart } from './decision-cursor.js';
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

/** What a poll answers: the new base when something was applied, and the server's clock as the answers gave it. */
export interface PollResult {
  next: SelectedEntry[] | undefined;
  serverTs: number | undefined;
}

/**
 * One poll of the two manual-decision feeds (filter 2 blocks, filter 3 whitelist) between
 * cycles, asking each only for records newer than the newest it holds (see decision-cursor.ts):
 * a decision set through `POST /ips` gives its record a new `ts`, so a new block or whitelist
 * entry is in the answer, and a poll that finds nothing costs a page header (or a 304: polls send
 * the validators of the answers kept from the last poll; a cycle's full pulls never do). The
 * newest record of an address wins across both feeds (feed/decisions.ts). A withdrawn
 * decision leaves the feed instead of coming back newer: the full pulls of each cycle notice it.
 * When the decisions differ from what the last cycle (or poll) applied, the last selection is
 * rebased on them and applied with the local overrides, through the protected set, without
 * pulling the score feed. The caller holds the agent lock; `write` runs the apply (the daemon's
 * writer: never held across the pull). `serverTs`: the server's clock from the previous poll
 * (kept in memory; the cache file has the one of the pull that wrote it). `base` is asked for
 * only when something is applied (the daemon keeps it as columns: a million entries made into
 * objects at every poll would be hundreds of MB of garbage).
 */
export async function pollDecisions(
  deps: DecisionPollDeps,
  base: () => readonly SelectedEntry[],
  now: number,
  serverTs?: number,
  write: (job: () => Promise<SelectedEntry[] | undefined>) => Promise<SelectedEntry[] | undefined> = (job) => job(),
): Promise<PollResult> {
  const { config, api, state, logger, settings } = deps;
  const previous = loadDecisionsCache(state.dir, logger);
  // Nothing to rebase on before the first successful cycle, which pulls the decisions itself.
  if (!previous) return { next: undefined, serverTs };
  const clock = Math.max(serverTs ?? 0, previous.serverTs ?? 0) || undefined;
  const common = { pageSize: config.page_size, logger, now, maxItems: config.max_feed_items ?? feedItemCap(settings.maximum_rules, state.small.largestFeed), conditional: true };
  const deadline = api.client.cycleDeadline;
  // Bounded like a cycle's calls, by the poll interval: a slow answer must not hold up the next cycle.
  deadline.start(Math.max(10, config.decision_poll_seconds) * 1000);
  let manual, white;
  try {
    [manual, white] = await Promise.all([
      pullFeed(api, { ...common, filter: FEED_FILTER.manualBlock, fromTs: pollStart(previous.manualBlocks, clock, now) }),
      pullFeed(api, { ...common, filter: FEED_FILTER.whitelist, fromTs: pollStart(previous.whitelist, clock, now) }),
    ]);
  } finally {
    deadline.stop();
  }
  const answered = [feedServerTime(manual.header), feedServerTime(white.header)];
  const nextServerTs = answered.every((t) => t !== undefined) ? Math.min(...(answered as number[])) : serverTs;
  const { manualBlocks, whitelist } = mergeDecisions(previous, { manualBlocks: manual.items, whitelist: white.items });
  const save = () => saveDecisionsCache(state.dir, { manualBlocks, whitelist, header: previous.formulas, decisionsServerTs: nextServerTs }, previous.at);
  if (sameDecisions(previous.manualBlocks, manualBlocks) && sameDecisions(previous.whitelist, whitelist)) {
    // Records re-stamped without a change of decision: kept, so the next poll starts after them.
    const upTo = cursorLimit(nextServerTs, now);
    if (newestTs(manualBlocks, upTo) > newestTs(previous.manualBlocks, upTo) || newestTs(whitelist, upTo) > newestTs(previous.whitelist, upTo)) {
      await write(async () => {
        save();
        return undefined;
      });
    }
    return { next: undefined, serverTs: nextServerTs };
  }
  const next = await write(async () => {
    const protectedSet = await localProtectedSet(config, state, logger, { offline: true });
    const rebased = rebaseOnDecisions({
      base: base(),
      manualBlocks: manualBlocks.values(),
      whitelist: whitelist.values(),
      protectedSet,
      minPrefix: config.min_prefix,
      maximumRules: settings.maximum_rules,
      now,
    });
    const white = new RangeSet([...whitelist.values()].map((w) => w.cidr));
    const r = await applyLocal(deps, rebased, now, { cause: 'poll', facts: { whitelist: white, isManual: (start, prefix) => manualBlocks.find(start, prefix) !== -1 } });
    // What plan --offline and the next poll compare against; the formula is the last cycle's.
    save();
    logger.info(
      { manual: manualBlocks.size, whitelist: whitelist.size, applied: r.applied, added: r.apply?.added ?? 0, removed: r.apply?.removed ?? 0 },
      'manual decisions changed: applied without a full cycle',
    );
    return rebased;
  });
  return { next, serverTs: nextServerTs };
}
