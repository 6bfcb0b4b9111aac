import { ApiResponseError } from '../errors.js';
import type { Logger } from '../log.js';
import { URL_PAGE_LIMIT, URL_TAGS, type UrlItem, type UrlPage } from '../api/wire.js';
import { UrlCache, type UrlDecisionState } from './url-cache.js';

export interface UrlSource {
  urlPage(ts: number, limit: number): Promise<UrlPage>;
}

export interface UrlPullOptions {
  /** Start (inclusive), epoch s; 0 = full pull. */
  fromTs: number;
  logger: Logger;
  /** Default: the largest the API allows. */
  limit?: number;
  maxPages?: number;
  onPage?: (pages: number, urls: number) => void;
}

export interface UrlPullResult {
  urls: UrlCache;
  /** Largest record ts seen (the next incremental pull starts here), or fromTs. */
  cursor: number;
  pages: number;
}

/** The decision a record's tags carry (assumed tag names, in the wire module). */
export function decisionOfTags(tags: readonly string[] | undefined): UrlDecisionState {
  if (!tags) return -1;
  if (tags.includes(URL_TAGS.whitelisted)) return 0;
  if (tags.includes(URL_TAGS.blacklisted)) return 1;
  return -1;
}

/**
 * Pull the URL feed from `fromTs`: the largest page, then again
 * from the header's `next_ts` while a page is full. A full page whose `next_ts` does not
 * move past the requested ts steps past it with a warning (never loops). Pages are folded
 * straight into a compact cache (no URL strings kept); any failed page fails the pull.
 */
export async function pullUrls(api: UrlSource, o: UrlPullOptions): Promise<UrlPullResult> {
  const limit = o.limit ?? URL_PAGE_LIMIT.max;
  const maxPages = o.maxPages ?? 20_000;
  const urls = new UrlCache();
  let ts = o.fromTs;
  let cursor = o.fromTs;
  let pages = 0;
  for (;;) {
    if (pages >= maxPages) throw new ApiResponseError(`GET /urls: still paging after ${maxPages} pages; refusing to continue`);
    const page = await api.urlPage(ts, limit);
    pages++;
    const body: UrlItem[] = page.body;
    if (body.length > limit) throw new ApiResponseError(`GET /urls: body: page holds ${body.length} items, more than the requested limit ${limit}`);
    let maxTs = ts;
    for (const item of body) {
      if (item.ts > maxTs) maxTs = item.ts;
      urls.upsert(item.url, item.score, item.ts, decisionOfTags(item.tags));
    }
    if (maxTs > cursor) cursor = maxTs;
    o.onPage?.(pages, urls.size);
    if (body.length < limit) break;
    const next = page.header.next_ts;
    if (next !== undefined && next > ts) {
      ts = next;
      continue;
    }
    if (maxTs > ts) {
      ts = maxTs;
      continue;
    }
    o.logger.warn({ ts }, `more than ${limit} URL records share ts ${ts} and next_ts does not move past it; records beyond the first ${limit} at that ts are skipped`);
    ts += 1;
  }
  if (urls.invalid > 0) o.logger.warn({ invalid: urls.invalid }, `${urls.invalid} URL records skipped: no usable host`);
  return { urls, cursor, pages };
}
