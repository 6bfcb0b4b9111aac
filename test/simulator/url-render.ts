/** JSON of URL feed pages (E4). */
import { isoSeconds } from './render.js';
import type { UrlRecord } from './urls.js';

export interface UrlPageOptions {
  now: number;
  limit: number;
  fromTs: number;
  userJson: string;
}

/**
 * `next_ts`: on a full page the ts of its last record (records sharing that ts may continue on
 * the next page; the client de-duplicates by url), else one past the last ts (nothing newer yet).
 */
export function renderUrlPage(o: UrlPageOptions, recs: readonly UrlRecord[]): string {
  const last = recs.at(-1)?.ts;
  const nextTs = last === undefined ? o.fromTs : recs.length >= o.limit ? last : last + 1;
  const header = `{"type":"urls","version":1,"ts":${o.now},"next_ts":${nextTs},"page_size":${o.limit},"user":${o.userJson}}`;
  let s = `{"header":${header},"body":[`;
  for (let k = 0; k < recs.length; k++) {
    const r = recs[k]!;
    if (k) s += ',';
    s +=
      `{"url":${JSON.stringify(r.url)},"score":${r.score},"ts":${r.ts},"total_reports":${r.totalReports},"total_members":${r.totalMembers},` +
      `"tags":${JSON.stringify(r.tags)},"idx_ts":"${isoSeconds(r.ts)}","idx_entry_ts":"${isoSeconds(r.entryTs)}","entry_ts":${r.entryTs}}`;
  }
  return s + ']}';
}
