import { ApiResponseError } from '../errors.js';
import type { Logger } from '../log.js';
import { MAX_PAGE_SIZE, type FeedFilter, type FeedHeader, type FeedPage } from '../api/wire.js';
import { IndicatorMap, toIndicator } from './indicator.js';
import { escapeControls } from '../util/terminal-text.js';

export interface FeedSource {
  feedPage(filter: FeedFilter, ts: number, limit: number, options?: { conditional?: boolean }): Promise<FeedPage>;
}

export interface PullOptions {
  filter: FeedFilter;
  /** Start of the pull (inclusive), epoch s. 0 = full pull. */
  fromTs: number;
  pageSize: number;
  logger: Logger;
  /** Safety bound against a server that never stops paging. */
  maxPages?: number;
  /**
   * Items (received, duplicates included) after which the pull is refused: a server that never
   * stops paging is stopped long before memory or time run out. See feedItemCap.
   */
  maxItems?: number;
  /** The agent's clock, epoch s (items stamped far beyond it do not move the cursor). */
  now?: number;
  onPage?: (pages: number, items: number) => void;
  /** Ask with the validators of the answers kept from before (the decision polls only: ThreatIntelApi.feedPage). */
  conditional?: boolean;
}

export interface PullResult {
  items: IndicatorMap;
  /** Largest item ts seen (the next incremental pull starts here), or fromTs. */
  cursor: number;
  /** Header of the first page (carries the decay formula). */
  header: FeedHeader | undefined;
  pages: number;
  /** Items skipped because their address is not a valid IPv4 address or network. */
  invalid: number;
  /** Timestamps at which more items shared one ts than a page can hold; some may be missed. */
  overfullTs: number[];
  /** Items stamped more than FUTURE_TOLERANCE_S ahead of the agent's clock. */
  future: number;
}

/** How far ahead of the agent's clock an item's ts may be (server clock skew) and still count for the cursor. */
export const FUTURE_TOLERANCE_S = 600;

/**
 * The most feed items a pull may receive: what the agent can use (a few times maximum_rules),
 * twice the largest feed seen before, and never less than a million (a first pull has no
 * history, and a real feed of a million indicators must come through).
 */
export function feedItemCap(maximumRules: number, largestFeedSeen = 0): number {
  return Math.max(1_000_000, 4 * maximumRules, 2 * largestFeedSeen);
}

/**
 * Pull every page of one feed selector from `fromTs` (the feed walk described in docs/daemon.md): pages
 * come ordered by ts; while a page is full, ask again from its largest ts (the
 * overlap is de-duplicated). A full page whose items all share the requested ts
 * cannot advance by ts: ask once with the largest page size, then step past that
 * ts with a warning, so equal timestamps never loop forever.
 *
 * Throws on any failed page: the caller applies nothing from a partial pull.
 */
export async function pullFeed(api: FeedSource, o: PullOptions): Promise<PullResult> {
  const items = new IndicatorMap();
  const maxPages = o.maxPages ?? 20_000;
  const maxItems = o.maxItems ?? Infinity;
  const futureFrom = (o.now ?? Date.now() / 1000) + FUTURE_TOLERANCE_S;
  let received = 0;
  let future = 0;
  let futureMax = 0;
  let ts = o.fromTs;
  let limit = o.pageSize;
  let cursor = o.fromTs;
  let header: FeedHeader | undefined;
  let pages = 0;
  let invalid = 0;
  const overfullTs: number[] = [];

  for (;;) {
    if (pages >= maxPages) throw new ApiResponseError(`GET /ips: still paging after ${maxPages} pages; refusing to continue`);
    if (received >= maxItems) {
      throw new ApiResponseError(`GET /ips: still paging after ${received} items in ${pages} pages (limit ${maxItems}: a few times maximum_rules or twice the largest feed seen); refusing to continue`);
    }
    const page = await api.feedPage(o.filter, ts, limit, { conditional: o.conditional === true });
    pages++;
    header ??= page.header;
    const body = page.body;
    received += body.length;
    if (body.length > limit) {
      throw new ApiResponseError(`GET /ips: body: page holds ${body.length} items, more than the requested limit ${limit}`);
    }
    let maxTs = ts;
    let cursorTs = ts;
    for (let i = 0; i < body.length; i++) {
      const item = body[i]!;
      if (item.ts > maxTs) maxTs = item.ts;
      // One item stamped years ahead must not move the cursor there (every newer indicator would
      // be missed until the next full pull): counted, and left out of the cursor.
      if (item.ts > futureFrom) {
        future++;
        if (item.ts > futureMax) futureMax = item.ts;
      } else if (item.ts > cursorTs) cursorTs = item.ts;
      const r = toIndicator(item);
      if (!r.ok) {
        if (invalid < 5) o.logger.warn({ filter: o.filter, index: i }, `feed item skipped: body.${i}.ip: ${escapeControls(r.error)}`);
        invalid++;
        continue;
      }
      items.upsert(r.indicator);
    }
    if (cursorTs > cursor) cursor = cursorTs;
    o.onPage?.(pages, items.size);

    if (body.length < limit) break;
    if (maxTs > ts) {
      ts = maxTs;
      continue;
    }
    if (limit < MAX_PAGE_SIZE) {
      limit = MAX_PAGE_SIZE;
      continue;
    }
    o.logger.warn(
      { filter: o.filter, ts },
      `more than ${limit} feed items share ts ${ts}; the API has no offset to page through them, so items beyond the first ${limit} at that ts are skipped`,
    );
    overfullTs.push(ts);
    ts += 1;
  }
  if (invalid > 0) o.logger.warn({ filter: o.filter, invalid }, `${invalid} feed items skipped for an invalid address`);
  if (future > 0) {
    o.logger.warn(
      { filter: o.filter, future, latestTs: futureMax },
      `${future} feed items are stamped more than ${FUTURE_TOLERANCE_S} s ahead of this host's clock; they do not move the cursor (check the server's and this host's clocks)`,
    );
  }
  return { items, cursor, header, pages, invalid, overfullTs, future };
}
