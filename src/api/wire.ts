import * as z from '../config/zod.js';
import { TextBuilder } from '../util/text-builder.js';

/**
 * Everything the agent knows about the API's wire format lives here: routes,
 * query parameter names, and the schemas every response is parsed with. The
 * spec leaves query names "not shown"; the agent fixes them (README,
 * "Assumptions"), so a deployment with other names changes only this file.
 */

export const ROUTES = {
  version: '/version',
  ips: '/ips',
  feedback: '/feedback',
  feedbackConfig: '/feedback/config',
  urls: '/urls',
  files: '/files',
} as const;

export const IPS_QUERY = {
  limit: 'limit',
  filter: 'filter',
  ts: 'ts',
  full: 'full',
} as const;

export const AGENT_QUERY = 'agid';

/** Feed selector values (`filter` of GET /ips). */
export const FEED_FILTER = { all: 0, ownOrg: 1, manualBlock: 2, whitelist: 3 } as const;
export type FeedFilter = (typeof FEED_FILTER)[keyof typeof FEED_FILTER];

export const MAX_PAGE_SIZE = 1000;

const epochSeconds = z.number().check(z.int(), z.gte(0));
const finiteNumber = () => z.number().check(z.refine(Number.isFinite, 'must be a finite number'));

/** One indicator as the agent uses it. Other spec fields are accepted and ignored. */
export const feedItemSchema = z.looseObject({
  ip: z.string().check(z.maxLength(64)),
  ts: epochSeconds,
  score: finiteNumber(),
  is_network: z.optional(z.boolean()),
  // No documented meaning (the feed walk described in docs/daemon.md): logged, never decided on.
  dec: z.optional(z.number()),
  delay: z.optional(z.number()),
});
export type FeedItem = z.infer<typeof feedItemSchema>;

export const feedHeaderSchema = z.looseObject({
  type: z.optional(z.string()),
  version: z.optional(z.number()),
  ts: z.optional(z.union([z.string(), z.number()])),
  page_size: z.optional(z.number()),
  delay: z.optional(z.number()),
  eval: z.optional(z.string()),
  exec_python: z.optional(z.string()),
});
export type FeedHeader = z.infer<typeof feedHeaderSchema>;

export const feedPageSchema = z.object({
  header: feedHeaderSchema,
  body: z.array(feedItemSchema),
});
export type FeedPage = z.infer<typeof feedPageSchema>;

const isOptionalFiniteNumber = (v: unknown) => v === undefined || (typeof v === 'number' && Number.isFinite(v));

/** feedItemSchema's checks, by hand (zod 4: int() means a safe integer, number() excludes NaN and Infinity). */
function isFeedItem(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  const { ip, ts, score, is_network } = o;
  return (
    typeof ip === 'string' &&
    ip.length <= 64 &&
    typeof ts === 'number' &&
    Number.isSafeInteger(ts) &&
    ts >= 0 &&
    typeof score === 'number' &&
    Number.isFinite(score) &&
    (is_network === undefined || typeof is_network === 'boolean') &&
    isOptionalFiniteNumber(o.dec) &&
    isOptionalFiniteNumber(o.delay)
  );
}

/**
 * Fast path for feedPageSchema: zod costs ~0.5 s per million items (it copies
 * every item) where these checks cost a few tens of ms. Answers the page when
 * every check passes (the header, one object, still goes through zod), else
 * undefined: the caller then validates with feedPageSchema, which rejects the
 * same pages and words the problems (`body.3.ts: ...`). It accepts nothing the
 * schema would reject. The items are passed on as parsed, not copied; only
 * `ip`, `ts` and `score` are read downstream.
 */
export function acceptFeedPage(json: unknown): FeedPage | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const { header, body } = json as { header?: unknown; body?: unknown };
  if (!Array.isArray(body)) return undefined;
  for (let i = 0; i < body.length; i++) if (!isFeedItem(body[i])) return undefined;
  const h = feedHeaderSchema.safeParse(header);
  return h.success ? { header: h.data, body: body as FeedItem[] } : undefined;
}

/**
 * An agent record (GET /feedback). `config` values arrive as numbers or numeric strings; they
 * are checked one by one in config/server.ts so one bad value does not discard
 * the others.
 */
export const agentRecordSchema = z.looseObject({
  agid: z.string(),
  config: z.optional(z.record(z.string(), z.unknown())),
  active: z.optional(z.boolean()),
});
export type AgentRecord = z.infer<typeof agentRecordSchema>;
export const agentListSchema = z.array(agentRecordSchema);

/**
 * Body of POST /feedback (the state report) besides `blacklist`, which `stateReportJson` writes
 * from the applied list. `hostanme` is spelled as the API spells it.
 */
export interface StateReportFields {
  agid: string;
  hostanme: string;
  plugin: string;
  code: number;
  maximum_rules: number;
  score_threshold: number;
  sync_time: string;
  ts: number;
  version: string;
}

/** The applied IPv4 networks, as columns (start address, prefix length) or as texts. */
export type CidrList = { readonly length: number; readonly starts: Uint32Array; readonly prefixes: Uint8Array } | readonly string[];

const isTexts = (list: CidrList): list is readonly string[] => Array.isArray(list);

/**
 * The state report as JSON bytes, `blacklist` last and written one network at a time into
 * one buffer. At a million applied entries, a million strings and the JSON text made of them
 * were the largest part of a cycle's peak (+70 MB of heap at once, and several times that
 * when the collector fell behind on a busy host; docs/performance.md).
 */
export function stateReportJson(fields: StateReportFields, blacklist: CidrList): Buffer {
  const head = JSON.stringify(fields);
  // ~19 bytes per network ("255.255.255.255/32",) besides the fields; reserved, not touched.
  const out = new TextBuilder(head.length + 32 + blacklist.length * 21);
  out.str(head.slice(0, -1)).str(',"blacklist":[');
  if (isTexts(blacklist)) blacklist.forEach((text, i) => (i > 0 ? out.byte(44) : out).str(JSON.stringify(text)));
  else for (let i = 0; i < blacklist.length; i++) (i > 0 ? out.byte(44) : out).byte(34).cidr(blacklist.starts[i]!, blacklist.prefixes[i]!).byte(34);
  return out.str(']}').toBuffer();
}

/** Body of POST /feedback/config (store an agent's configuration): five strings. */
export interface StoredConfigBody {
  maximum_rules?: string;
  running?: string;
  score_threshold?: string;
  sync_time?: string;
  version?: string;
}

/** GET /urls query names (assumed, see README Assumptions) and the spec's limit range `100 < x < 2000`. */
export const URLS_QUERY = { ts: 'ts', limit: 'limit' } as const;
export const URL_PAGE_LIMIT = { min: 101, max: 1999 } as const;

/** GET /files/{digest} query name (assumed) and its values. */
export const FILES_QUERY = { deep: 'deep' } as const;
export const DEEP_VALUE = { yes: 'YES', no: 'NO' } as const;

/**
 * Tags a decision set with PUT /urls/{url} shows in the URL's record (assumed, see
 * README Assumptions): 0 -> whitelisted, 1 -> blacklisted, -1 -> neither.
 */
export const URL_TAGS = { whitelisted: 'whitelisted', blacklisted: 'blacklisted' } as const;

/** PUT /urls/{url} body values. */
export const URL_DECISION = { none: -1, allow: 0, block: 1 } as const;
export type UrlDecision = (typeof URL_DECISION)[keyof typeof URL_DECISION];

/** The path of PUT /urls/{url} for one URL: the URL percent-encoded as ONE path segment. */
export function urlDecisionRoute(url: string): string {
  return `${ROUTES.urls}/${encodeURIComponent(url)}`;
}

/** The path of GET /files/{digest} for one digest (hex only, checked by the caller). */
export function fileRoute(digest: string): string {
  return `${ROUTES.files}/${digest}`;
}

/** One URL record as the agent uses it; other spec fields are accepted and ignored. */
export const urlItemSchema = z.looseObject({
  url: z.string().check(z.maxLength(8192)),
  score: finiteNumber(),
  ts: epochSeconds,
  tags: z.optional(z.array(z.string())),
});
export type UrlItem = z.infer<typeof urlItemSchema>;

export const urlPageSchema = z.object({
  header: z.looseObject({ next_ts: z.optional(epochSeconds), page_size: z.optional(z.number()), ts: z.optional(z.union([z.string(), z.number()])) }),
  body: z.array(urlItemSchema),
});
export type UrlPage = z.infer<typeof urlPageSchema>;

/** urlItemSchema's checks by hand (as acceptFeedPage does for the IPv4 feed: zod copies every item). */
function isUrlItem(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const { url, score, ts, tags } = v as Record<string, unknown>;
  return (
    typeof url === 'string' &&
    url.length <= 8192 &&
    typeof score === 'number' &&
    Number.isFinite(score) &&
    typeof ts === 'number' &&
    Number.isSafeInteger(ts) &&
    ts >= 0 &&
    (tags === undefined || (Array.isArray(tags) && tags.every((t) => typeof t === 'string')))
  );
}

/** Fast path for urlPageSchema: the page when every check passes, else undefined (zod then words the problems). */
export function acceptUrlPage(json: unknown): UrlPage | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const { header, body } = json as { header?: unknown; body?: unknown };
  if (!Array.isArray(body)) return undefined;
  for (let i = 0; i < body.length; i++) if (!isUrlItem(body[i])) return undefined;
  const h = urlPageSchema.shape.header.safeParse(header);
  return h.success ? { header: h.data, body: body as UrlItem[] } : undefined;
}

/** GET /files/{digest} answer. */
export const fileRecordSchema = z.looseObject({
  md5: z.optional(z.string()),
  sha1: z.optional(z.string()),
  sha256: z.optional(z.string()),
  score: z.optional(z.number()),
  ts: z.optional(z.number()),
  file_type: z.optional(z.string()),
  file_name: z.optional(z.string()),
  file_bytes: z.optional(z.nullable(z.number())),
  total_reports: z.optional(z.number()),
  total_members: z.optional(z.number()),
  tags: z.optional(z.array(z.string())),
});
export type FileRecord = z.infer<typeof fileRecordSchema>;
