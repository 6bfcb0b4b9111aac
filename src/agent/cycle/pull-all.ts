import type { Logger } from '../../log.js';
import { FEED_FILTER, feedServerTime, type FeedHeader } from '../../api/wire.js';
import type { IndicatorMap } from '../../feed/indicator.js';
import { pullFeed, type FeedSource } from '../../feed/pull.js';
import { newestDecisions } from '../../feed/decisions.js';

export interface PullAllInput {
  api: FeedSource;
  logger: Logger;
  pageSize: number;
  /**
   * Cached score-based feed and its cursor; undefined = full pull. The map is
   * taken over: it becomes the merged feed (callers load it afresh for each
   * pull, and a copy of a million-entry feed would double the memory).
   */
  cache: { items: IndicatorMap; cursor: number } | undefined;
  onProgress?: (what: string, pages: number, items: number) => void;
  /** Items each feed's pull may receive before it is refused (feedItemCap). */
  maxItems?: number;
  /** The agent's clock, epoch s. */
  now?: number;
}

export interface PulledFeeds {
  /** The merged score-based feed (cache + this pull). */
  feed: IndicatorMap;
  /** False when an incremental pull brought nothing: `feed` equals the cache it started from. */
  feedChanged: boolean;
  cursor: number;
  full: boolean;
  header: FeedHeader | undefined;
  manualBlocks: IndicatorMap;
  whitelist: IndicatorMap;
  /** The server's clock as the decision feeds' headers gave it (the earlier of the two), if they did: where polls start. */
  decisionsServerTs: number | undefined;
  pages: number;
  invalid: number;
}

/**
 * Pull the score feed (full, or incremental from the cached cursor) and the two
 * manual-decision feeds. Either everything comes back or an error is thrown:
 * nothing of a partial pull is kept (the cache passed in is merged into only
 * once every pull has succeeded).
 */
export async function pullAll(input: PullAllInput): Promise<PulledFeeds> {
  const { api, logger, pageSize, cache } = input;
  const common = { pageSize, logger, maxItems: input.maxItems, now: input.now };
  // The three feeds are independent: pulled at the same time (over the keep-alive pool), so a
  // cycle waits for the longest, not the sum. Every one must succeed; all are awaited before an
  // error is thrown, so none is left running (or failing unobserved) behind the cycle.
  const settled = await Promise.allSettled([
    pullFeed(api, {
      ...common,
      filter: FEED_FILTER.all,
      fromTs: cache?.cursor ?? 0,
      onPage: (p, n) => input.onProgress?.('feed', p, n),
    }),
    pullFeed(api, { ...common, filter: FEED_FILTER.manualBlock, fromTs: 0 }),
    pullFeed(api, { ...common, filter: FEED_FILTER.whitelist, fromTs: 0 }),
  ]);
  for (const r of settled) if (r.status === 'rejected') throw r.reason;
  type Pulled = Awaited<ReturnType<typeof pullFeed>>;
  const [main, manual, white] = settled.map((r) => (r as PromiseFulfilledResult<Pulled>).value) as [Pulled, Pulled, Pulled];

  // The two decision feeds are answered a moment apart: an address that moved between them in that moment is in both, and its newer record is its decision.
  const decisions = newestDecisions({ manualBlocks: manual.items, whitelist: white.items });
  let feed = main.items;
  if (cache) {
    feed = cache.items;
    feed.merge(main.items);
  }
  return {
    feed,
    feedChanged: cache === undefined || main.items.size > 0,
    cursor: Math.max(main.cursor, cache?.cursor ?? 0),
    full: cache === undefined,
    header: main.header,
    manualBlocks: decisions.manualBlocks,
    whitelist: decisions.whitelist,
    decisionsServerTs: earlier(feedServerTime(manual.header), feedServerTime(white.header)),
    pages: main.pages + manual.pages + white.pages,
    invalid: main.invalid + manual.invalid + white.invalid,
  };
}

function earlier(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : Math.min(a, b);
}
