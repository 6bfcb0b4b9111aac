import { UrlApi } from '../../api/url-api.js';
import { URL_DECISION, URL_PAGE_LIMIT, type UrlDecision, type UrlItem } from '../../api/wire.js';
import { UsageError } from '../../errors.js';
import { hostOfUrl } from '../../feed/host.js';
import { decisionOfTags } from '../../feed/url-pull.js';
import { createApi, loadContext, type GlobalOptions } from '../context.js';
import { isoTime, printJson, table } from '../format.js';
import { terminalSafe } from '../../util/terminal-text.js';

const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
const DECISIONS: Record<string, UrlDecision> = { block: URL_DECISION.block, allow: URL_DECISION.allow, none: URL_DECISION.none };
/** Longest URL the commands send (a pasted file is a mistake, not a URL). */
export const URL_MAX = 8192;

/** `--since`: epoch seconds, or a time ago (`90m`, `12h`, `7d`). */
export function parseSince(value: string | undefined, now: number): number {
  if (value === undefined) return 0;
  const m = /^(\d+)([smhd])?$/.exec(value.trim());
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw new UsageError(`--since: expected epoch seconds or a time ago such as 90m, 12h, 7d, got ${JSON.stringify(value)}`);
  return m[2] ? Math.max(0, now - Number(m[1]) * UNIT_S[m[2]]!) : Number(m[1]);
}

/** `--limit`: rows to show, 1..1999 (the API's largest page). */
export function parseUrlLimit(value: string | undefined): number {
  if (value === undefined) return 100;
  const v = value.trim();
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > URL_PAGE_LIMIT.max) throw new UsageError(`--limit: expected a whole number from 1 to ${URL_PAGE_LIMIT.max}, got ${JSON.stringify(value)}`);
  return Number(v);
}

/** An http(s) URL with a host; the text is sent as given (percent-encoded as one path segment by the wire module). */
export function parseDecisionUrl(value: string): string {
  const v = value.trim();
  if (v.length === 0 || v.length > URL_MAX) throw new UsageError(`URL: expected an http or https URL of 1..${URL_MAX} characters`);
  const u = URL.parse(v);
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) throw new UsageError(`URL: expected an http or https URL with a host, got ${JSON.stringify(terminalSafe(v, 200))}`);
  return v;
}

export function parseUrlDecision(value: string): UrlDecision {
  const d = DECISIONS[value.trim().toLowerCase()];
  if (d === undefined) throw new UsageError(`DECISION: expected block, allow or none, got ${JSON.stringify(terminalSafe(value, 40))}`);
  return d;
}

const DECISION_WORD = { [-1]: '-', 0: 'whitelisted', 1: 'blacklisted' } as const;

export function urlRows(items: readonly UrlItem[]): string[][] {
  return items.map((u) => {
    const h = hostOfUrl(u.url);
    const host = h.kind === 'name' || h.kind === 'public_suffix' ? h.name : h.kind === 'ipv4' ? h.ip : '(invalid)';
    return [isoTime(u.ts), u.score.toFixed(2), DECISION_WORD[decisionOfTags(u.tags)], terminalSafe(host, 50), terminalSafe(u.url, 100)];
  });
}

/** `urls list`: one page of GET /urls from --since, the newest records the API has from there. */
export async function urlsListCommand(opts: GlobalOptions & { since?: string; limit?: string; json?: boolean }): Promise<number> {
  const limit = parseUrlLimit(opts.limit);
  const since = parseSince(opts.since, Math.floor(Date.now() / 1000));
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = new UrlApi(createApi(config, logger).client);
  try {
    // The API takes at least 101 per page: ask for that and show what was asked for.
    const page = await api.urlPage(since, Math.max(limit, URL_PAGE_LIMIT.min));
    const items = page.body.slice(0, limit);
    if (opts.json) {
      await printJson({ since, next_ts: page.header.next_ts ?? null, count: items.length, urls: items });
      return 0;
    }
    process.stdout.write(table(['ts', 'score', 'decision', 'host', 'url'], urlRows(items), ['l', 'r', 'l', 'l', 'l']) + '\n');
    process.stdout.write(`${items.length} URLs from ${isoTime(since)}${page.header.next_ts !== undefined ? `; next: --since ${page.header.next_ts}` : ''}\n`);
    return 0;
  } finally {
    await api.client.close();
  }
}

/** `urls decide URL block|allow|none`: PUT /urls/{url}. */
export async function urlsDecideCommand(url: string, decision: string, opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const target = parseDecisionUrl(url);
  const d = parseUrlDecision(decision);
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = new UrlApi(createApi(config, logger).client);
  try {
    await api.decide(target, d);
  } finally {
    await api.client.close();
  }
  if (opts.json) {
    await printJson({ url: target, decision: d === 1 ? 'block' : d === 0 ? 'allow' : 'none' });
    return 0;
  }
  const word = d === 1 ? 'block (blacklisted)' : d === 0 ? 'allow (whitelisted)' : 'none (score-based)';
  process.stdout.write(`decision for ${terminalSafe(target, 200)}: ${word}; agents with url_feed apply it at their next sync\n`);
  return 0;
}
