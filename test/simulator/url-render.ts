/** JSON of URL feed pages (GET /urls). */
import { isoSeconds } from './render.js';
import type { UrlRecord } from './urls.js';

export interface UrlPageOptions {
  now: number;
  limit: number;
  fromTs: number;
  userJson: string;
}

const users = new Map<string, string>();
/** The URL feed's `user`: its `member_of` also carries `credit_tokens` and `debit_tokens` (spec). */
function urlUser(userJson: string): string {
  let u = users.get(userJson);
  if (u === undefined) {
    const v = JSON.parse(userJson) as { member_of?: Record<string, unknown> };
    v.member_of = { ...v.member_of, credit_tokens: 1000, debit_tokens: 0 };
    u = JSON.stringify(v);
    users.set(userJson, u);
  }
  return u;
}

/**
 * `next_ts`: on a full page the ts of its last record (records sharing that ts may continue on
 * the next page; the client de-duplicates by url), else one past the last ts (nothing newer yet).
 */
export function renderUrlPage(o: UrlPageOptions, recs: readonly UrlRecord[]): string {
  const last = recs.at(-1)?.ts;
  const nextTs = last === undefined ? o.fromTs : recs.length >= o.limit ? last : last + 1;
  const header = `{"type":"urls","version":1,"ts":${o.now},"next_ts":${nextTs},"page_size":${o.limit},"user":${urlUser(o.userJson)}}`;
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
