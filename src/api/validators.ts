import type { IncomingHttpHeaders } from 'node:http';
import type { TransportResponse } from './transport-types.js';

/**
 * Conditional requests: when an answer carries `ETag` or `Last-Modified`, the next request for
 * the same URL sends `If-None-Match` / `If-Modified-Since`, and a 304 means "the same answer as
 * last time", which is kept here to be read again. Only for the calls that ask for it (small,
 * repeated answers: the decision feeds and the agent record), within a byte budget, and only
 * when the server offers validators: a server without them costs nothing here.
 */
export interface Validated {
  etag?: string | undefined;
  lastModified?: string | undefined;
  text: string;
  date: string | undefined;
}

/** Answers kept for 304s, all together (the decision feeds at 100,000 selected are about 0.5 MB). */
const BUDGET_BYTES = 4 * 1024 * 1024;
/** A header value we send back: printable ASCII, bounded (it comes from the server). */
const SAFE = /^[\x20-\x7e]{1,512}$/;

function header(h: IncomingHttpHeaders, name: string): string | undefined {
  const v = h[name];
  return typeof v === 'string' && SAFE.test(v) ? v : undefined;
}

export class ValidatorCache {
  private readonly entries = new Map<string, Validated>();
  private bytes = 0;

  constructor(private readonly budget = BUDGET_BYTES) {}

  /** The request headers that make a request for `url` conditional (none when nothing is kept for it). */
  conditions(url: string): Record<string, string> {
    const e = this.entries.get(url);
    if (!e) return {};
    return { ...(e.etag ? { 'if-none-match': e.etag } : {}), ...(e.lastModified ? { 'if-modified-since': e.lastModified } : {}) };
  }

  /** Whether an answer is kept for `url` (what a 304 for it would stand for). */
  has(url: string): boolean {
    return this.entries.has(url);
  }

  /** The answer kept for a 304. */
  get(url: string): Validated | undefined {
    const e = this.entries.get(url);
    if (e) {
      // Most recently used last: the oldest goes first when the budget is spent.
      this.entries.delete(url);
      this.entries.set(url, e);
    }
    return e;
  }

  /** Keep a 2xx answer that carries a validator; forget the URL's old answer otherwise. */
  remember(url: string, headers: IncomingHttpHeaders, text: string, date: string | undefined): void {
    this.forget(url);
    const etag = header(headers, 'etag');
    const lastModified = header(headers, 'last-modified');
    if ((!etag && !lastModified) || text.length > this.budget / 4) return;
    this.entries.set(url, { etag, lastModified, text, date });
    this.bytes += text.length;
    for (const [k, v] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(k);
      this.bytes -= v.text.length;
    }
  }

  forget(url: string): void {
    const e = this.entries.get(url);
    if (!e) return;
    this.entries.delete(url);
    this.bytes -= e.text.length;
  }
}

/**
 * A conditional call's answer: a 304 is the kept answer again (`interpret`ed as a 200, marked
 * `notModified`); a new answer with a validator is kept, anything else forgets the URL's.
 */
export function conditionalAnswer<R extends { status: number }>(
  kept: ValidatorCache,
  url: string,
  res: Pick<TransportResponse, 'statusCode' | 'headers'>,
  text: string,
  date: string | undefined,
  interpret: (status: number, text: string, date: string | undefined) => R,
): R & { notModified?: boolean } {
  const old = res.statusCode === 304 ? kept.get(url) : undefined;
  if (old) return { ...interpret(200, old.text, date ?? old.date), notModified: true };
  try {
    const r = interpret(res.statusCode, text, date);
    if (r.status >= 200 && r.status < 300) kept.remember(url, res.headers, text, date);
    else kept.forget(url);
    return r;
  } catch (err) {
    kept.forget(url);
    throw err;
  }
}
