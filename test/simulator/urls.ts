/**
 * The URL feed (GET /urls) and URL decisions (PUT /urls/{url}): N URLs computed on demand from (seed, index),
 * like the IPv4 data, plus an overlay of records added or re-stamped at run time.
 *
 * Base data properties (deterministic for a seed, count and start):
 * - index order is feed order (ts non-decreasing), spread over 10 days before start;
 * - about N/8 hosts, so many URLs share a host; hosts include shared platforms
 *   (docs.google.com, raw.githubusercontent.com, NAME.blogspot.com, NAME.github.io),
 *   bare public suffixes (github.io, co.uk), IDN hosts (written in Unicode), IPv4-literal
 *   hosts, and plain registrable names with subdomains;
 * - URL forms: ports, userinfo, upper-case schemes and hosts, trailing-dot hosts,
 *   percent-encoded paths, and ~1% malformed strings that are no URL at all;
 * - every base URL carries the marker `u<index>` at its end, so a URL string maps back to
 *   its index without a table (`indexOf`);
 * - score 1.00..10.00; ~0.5% tagged "blacklisted", ~0.5% "whitelisted".
 */
import { hash3, mix32 } from './ipspace.js';

const DAY = 86_400;
export const MAX_URLS = 1 << 24;
/** Tag names for decisions (assumed, as the agent's wire module). */
export const TAG_WHITELISTED = 'whitelisted';
export const TAG_BLACKLISTED = 'blacklisted';

const WORDS = ['login', 'secure', 'account', 'verify', 'update', 'payment', 'bank', 'mail', 'cloud', 'shop', 'promo', 'track', 'cdn', 'files', 'portal', 'support'];
const TLDS = ['com', 'net', 'org', 'info', 'xyz', 'top', 'ru', 'co.uk', 'com.br', 'de'];
const SHARED = ['docs.google.com', 'raw.githubusercontent.com', 'drive.google.com', 'sites.google.com'];
const SUFFIXES = ['github.io', 'co.uk', 'blogspot.com'];
const IDN = ['bücher', 'пример', 'café', 'münchen', '例え'];
const IDN_TLDS = ['de', 'рф', 'fr', 'com', 'jp'];
const MALFORMED = ['http://', 'not a url', 'http://exa mple.com/', '://missing-scheme', 'http://[::1', 'https://%zz/', 'javascript:alert(1)', 'http://a..b/'];

export interface UrlRecord {
  url: string;
  score: number;
  ts: number;
  entryTs: number;
  tags: string[];
  totalReports: number;
  totalMembers: number;
}

export class UrlData {
  readonly count: number;
  readonly start: number;
  readonly hostCount: number;
  private readonly key: number;

  constructor(opts: { seed: number; count: number; start: number }) {
    if (!Number.isSafeInteger(opts.count) || opts.count < 0 || opts.count > MAX_URLS) throw new RangeError(`urls must be an integer from 0 to ${MAX_URLS}`);
    this.count = opts.count;
    this.start = Math.floor(opts.start);
    this.key = mix32((opts.seed | 0) ^ 0x5a17);
    this.hostCount = Math.max(1, Math.ceil(opts.count / 8));
  }

  private h(i: number, salt: number): number {
    return hash3(this.key, i, salt);
  }

  tsAt(i: number): number {
    const f = (i + this.h(i, 1) / 2 ** 32) / Math.max(1, this.count);
    return this.start - 10 * DAY + Math.floor((10 * DAY * Math.log1p(Math.expm1(2) * f)) / 2);
  }

  /** First index whose ts >= ts. */
  lowerBound(ts: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.tsAt(mid) < ts) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Host of host index j, as written in a URL (IDN in Unicode). */
  hostName(j: number): string {
    const h = this.h(j, 2);
    const kind = h % 100;
    const word = WORDS[(h >>> 8) % WORDS.length]!;
    if (kind < 6) return SHARED[(h >>> 12) % SHARED.length]!;
    if (kind < 10) return `${word}${j}.${(h >>> 12) % 2 ? 'blogspot.com' : 'github.io'}`;
    if (kind < 11) return SUFFIXES[(h >>> 12) % SUFFIXES.length]!;
    if (kind < 16) return `${IDN[(h >>> 12) % IDN.length]}${j}.${IDN_TLDS[(h >>> 16) % IDN_TLDS.length]}`;
    if (kind < 21) return `45.${(j >>> 16) & 255}.${(j >>> 8) & 255}.${j & 255}`;
    const base = `${word}-${j}.${TLDS[(h >>> 12) % TLDS.length]}`;
    return kind < 40 ? `${WORDS[(h >>> 20) % WORDS.length]}.${base}` : base;
  }

  hostIndexAt(i: number): number {
    return this.h(i, 3) % this.hostCount;
  }

  urlAt(i: number): string {
    const h = this.h(i, 4);
    const marker = `u${i}`;
    if (h % 100 === 0) return `${MALFORMED[(h >>> 8) % MALFORMED.length]}${marker}`;
    let host = this.hostName(this.hostIndexAt(i));
    const form = (h >>> 8) % 20;
    let scheme = (h >>> 16) % 3 ? 'https' : 'http';
    let auth = '';
    let port = '';
    let path = `/p/${(h >>> 20) % 50}/`;
    if (form === 0) port = ':8080';
    else if (form === 1) auth = 'user:secret@';
    else if (form === 2) {
      scheme = scheme.toUpperCase();
      host = host.toUpperCase();
    } else if (form === 3 && !/^\d/.test(host)) host += '.';
    else if (form === 4) path = '/%2e%2E/a%20b/%41/';
    else if (form === 5) path = '/login.php?next=%2F&x=1#';
    return `${scheme}://${auth}${host}${port}${path}${marker}`;
  }

  /** Base index of a URL string, or -1. */
  indexOf(url: string): number {
    const m = /u(\d+)$/.exec(url);
    if (!m) return -1;
    const i = Number(m[1]);
    return i < this.count && this.urlAt(i) === url ? i : -1;
  }

  recordAt(i: number): UrlRecord {
    const ts = this.tsAt(i);
    const h = this.h(i, 5);
    const d = h % 1000;
    return {
      url: this.urlAt(i),
      score: (100 + (this.h(i, 6) % 901)) / 100,
      ts,
      entryTs: h % 4 === 0 ? ts : ts - ((h >>> 4) % (30 * DAY)),
      tags: d < 5 ? [TAG_BLACKLISTED] : d < 10 ? [TAG_WHITELISTED] : (h >>> 12) % 3 === 0 ? ['phishing'] : [],
      totalReports: 1 + ((h >>> 8) % 40),
      totalMembers: 1 + ((h >>> 16) % 12),
    };
  }
}

/** Base data plus run-time records; the feed is merged in ts order (base before overlay on ties). */
export class UrlStore {
  private readonly shadowed = new Set<number>();
  private readonly overlay = new Map<string, UrlRecord>();
  private sorted: UrlRecord[] = [];

  constructor(
    readonly data: UrlData,
    private readonly now: () => number,
  ) {}

  get(url: string): UrlRecord | undefined {
    const o = this.overlay.get(url);
    if (o) return o;
    const i = this.data.indexOf(url);
    return i >= 0 && !this.shadowed.has(i) ? this.data.recordAt(i) : undefined;
  }

  /** Adds or re-stamps a URL (ts = given or now; it moves to that place in the feed). */
  upsert(url: string, fields: { score?: number; ts?: number; tags?: string[] }): UrlRecord {
    const prev = this.get(url);
    const ts = fields.ts ?? this.now();
    const rec: UrlRecord = {
      url,
      score: fields.score ?? prev?.score ?? 5,
      ts,
      entryTs: Math.min(prev?.entryTs ?? ts, ts),
      tags: fields.tags ?? prev?.tags ?? [],
      totalReports: (prev?.totalReports ?? 0) + 1,
      totalMembers: prev?.totalMembers ?? 1,
    };
    const i = this.data.indexOf(url);
    if (i >= 0) this.shadowed.add(i);
    if (this.overlay.has(url)) this.sorted = this.sorted.filter((r) => r.url !== url);
    this.overlay.set(url, rec);
    let k = this.sorted.length;
    while (k > 0 && this.sorted[k - 1]!.ts > ts) k--;
    this.sorted.splice(k, 0, rec);
    return rec;
  }

  /** PUT /urls/{url}: the decision re-stamps the record and sets the decision tags. */
  decide(url: string, decision: -1 | 0 | 1): void {
    const prev = this.get(url);
    const tags = (prev?.tags ?? []).filter((t) => t !== TAG_WHITELISTED && t !== TAG_BLACKLISTED);
    if (decision === 0) tags.push(TAG_WHITELISTED);
    if (decision === 1) tags.push(TAG_BLACKLISTED);
    this.upsert(url, { tags, score: prev?.score ?? 5 });
  }

  /** Records with ts >= fromTs, in feed order. */
  *from(fromTs: number): Generator<UrlRecord> {
    let i = this.data.lowerBound(fromTs);
    let o = this.sorted.findIndex((r) => r.ts >= fromTs);
    if (o < 0) o = this.sorted.length;
    for (;;) {
      while (i < this.data.count && this.shadowed.has(i)) i++;
      const baseTs = i < this.data.count ? this.data.tsAt(i) : Infinity;
      const rec = this.sorted[o];
      if (baseTs === Infinity && !rec) return;
      if (!rec || baseTs <= rec.ts) yield this.data.recordAt(i++);
      else {
        yield rec;
        o++;
      }
    }
  }

  /** Up to `limit` records with ts >= fromTs, in feed order. */
  page(fromTs: number, limit: number): UrlRecord[] {
    const out: UrlRecord[] = [];
    if (limit <= 0) return out;
    for (const r of this.from(fromTs)) {
      out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  }
}
