/**
 * Fault modes, switchable at run time. A fault applies to authenticated API routes
 * (never /version, never /_sim) that it makes sense for and that match `routes`;
 * with `count` it applies to the next N such requests and then clears itself; with
 * `skipRequests` the first N such requests are answered normally first (a failure
 * half-way through paging: `{ routes: ['GET /ips'], skipRequests: 2 }` fails page 3).
 *
 * | mode         | routes                 | effect |
 * |--------------|------------------------|--------|
 * | http500      | all                    | 500 `{"message":"simulated internal error"}` |
 * | http429      | all                    | 429 `{"message":"simulated rate limit"}` |
 * | slow         | all                    | waits `delayMs` (default 2000) then answers normally; other requests are not blocked |
 * | truncated    | GET /ips, /feedback, /urls | sends the first half of the real JSON; `truncate: 'end'` (default) ends the response cleanly (body is invalid JSON), `'destroy'` declares the full Content-Length and closes the socket |
 * | wrongTypes   | GET /ips, /feedback, /urls | `/ips` and `/urls`: `wrongTypes: 'fields'` (default) score/ts/entry_ts as strings, is_network as "false"; `'body'`: body is an object. `/feedback`: ts as string and config values as objects |
 * | oversized    | GET /ips, /urls (bytes: /ips, /feedback) | `oversize: 'items'` (default): a page with 2*limit items (padded if the feed is short); `'bytes'`: a valid JSON body of about `sizeBytes` (default 64 MiB) streamed with back-pressure |
 * | unauthorized | all                    | the first `afterRequests` (default 1) matching requests pass, then 401 |
 * | formulaCode  | GET /ips               | header `eval`/`exec_python` carry code: `formula: 'exit'` (default) `process.exit(1)`, `'exec'` `require('child_process').execSync('touch /tmp/pwned')`; exec_python `__import__('os').system('touch /tmp/pwned')`; or `formula: {eval, exec_python}` |
 * | reset        | all                    | destroys the socket without answering |
 * | empty        | GET /ips, GET /urls    | an empty page |
 * | badJson      | all                    | 200 with an HTML body and `content-type: application/json` |
 * | trickle      | GET /ips, GET /feedback | the real answer, `trickleBytes` (default 1) every `delayMs` (default 500): never idle long enough for a body timeout; `finishTrickles()` sends the rest at once |
 * | futureTs     | GET /ips               | the last page (not full) gets one more item, 203.0.113.77, stamped `aheadSeconds` (default 10 years) after the clock |
 * | endless      | GET /ips               | every page is full of new items stamped one second after the requested ts: paging never ends |
 *
 * `http500` with `message` sends that message instead (e.g. terminal escape sequences); with `status`
 * it answers that status instead of 500 (e.g. 503).
 */

export const FAULT_MODES = [
  'http500',
  'http429',
  'slow',
  'truncated',
  'wrongTypes',
  'oversized',
  'unauthorized',
  'formulaCode',
  'reset',
  'empty',
  'badJson',
  'trickle',
  'futureTs',
  'endless',
] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

export interface FaultOptions {
  /** Apply to the next N matching requests, then clear. Default: until changed. */
  count?: number;
  /** Route filter: entries `'GET /ips'` (method + path relative to /api/v1) or `'/ips'` (any method). */
  routes?: string[];
  /** Answer the first N matching requests normally, then apply the fault (any mode). Default 0. */
  skipRequests?: number;
  /**
   * Only `/ips` requests with this `filter` match (the agent pulls its three feeds at the same
   * time, so "page N" of one feed needs the feed named). Other requests do not match.
   */
  filter?: number;
  /** slow: delay in ms (default 2000). */
  delayMs?: number;
  /** oversized/bytes: approximate body size (default 64 MiB). */
  sizeBytes?: number;
  /** oversized: 'items' (default) or 'bytes'. */
  oversize?: 'items' | 'bytes';
  /** unauthorized: requests answered normally before the 401s start (default 1). */
  afterRequests?: number;
  /** formulaCode: which code to publish. */
  formula?: 'exit' | 'exec' | { eval: string; exec_python: string };
  /** wrongTypes on /ips: 'fields' (default) or 'body'. */
  wrongTypes?: 'fields' | 'body';
  /** truncated: 'end' (default) or 'destroy'. */
  truncate?: 'end' | 'destroy';
  /** http500: the message to send. */
  message?: string;
  /** http500: another 5xx status to answer with (503 for a service that is down). Default 500. */
  status?: number;
  /** trickle: bytes per write (default 1). */
  trickleBytes?: number;
  /** futureTs: seconds ahead of the clock (default 10 years). */
  aheadSeconds?: number;
}

export interface ActiveFault {
  mode: FaultMode;
  options: FaultOptions;
}

const ALL = (): boolean => true;
const GETS = (r: string): boolean => r === 'GET /ips' || r === 'GET /feedback' || r === 'GET /urls';
const FEEDS = (r: string): boolean => r === 'GET /ips' || r === 'GET /urls';
const IPS = (r: string): boolean => r === 'GET /ips';
const APPLIES: Record<FaultMode, (route: string, o: FaultOptions) => boolean> = {
  http500: ALL,
  http429: ALL,
  slow: ALL,
  truncated: GETS,
  wrongTypes: GETS,
  oversized: (r, o) => (o.oversize === 'bytes' ? r === 'GET /ips' || r === 'GET /feedback' : FEEDS(r)),
  unauthorized: ALL,
  formulaCode: IPS,
  reset: ALL,
  empty: FEEDS,
  badJson: ALL,
  trickle: GETS,
  futureTs: IPS,
  endless: IPS,
};

export class FaultState {
  private active: ActiveFault | null = null;
  private remaining = Infinity;
  private passed = 0;
  private skipped = 0;

  set(mode: FaultMode | null, options: FaultOptions = {}): void {
    if (mode !== null && !(FAULT_MODES as readonly string[]).includes(mode)) throw new TypeError(`unknown fault mode: ${String(mode)}`);
    const count = options.count;
    if (count !== undefined && (!Number.isInteger(count) || count < 1)) throw new RangeError('count must be a positive integer');
    const skip = options.skipRequests;
    if (skip !== undefined && (!Number.isInteger(skip) || skip < 0)) throw new RangeError('skipRequests must be a non-negative integer');
    this.active = mode === null ? null : { mode, options: { ...options } };
    this.remaining = count ?? Infinity;
    this.passed = 0;
    this.skipped = 0;
  }

  get current(): ActiveFault | null {
    return this.active;
  }

  /** Decides for one request whether the fault applies, consuming `count`. */
  take(route: string, query: Record<string, string> = {}): ActiveFault | null {
    const f = this.active;
    if (!f || !APPLIES[f.mode](route, f.options)) return null;
    const routes = f.options.routes;
    if (routes && !routes.some((r) => r === route || r === route.slice(route.indexOf(' ') + 1))) return null;
    if (f.options.filter !== undefined && !(route.endsWith(' /ips') && query.filter === String(f.options.filter))) return null;
    if (this.skipped < (f.options.skipRequests ?? 0)) {
      this.skipped++;
      return null;
    }
    if (f.mode === 'unauthorized' && this.passed < (f.options.afterRequests ?? 1)) {
      this.passed++;
      return null;
    }
    if (--this.remaining <= 0) this.active = null;
    return f;
  }
}

export const PWNED_PYTHON = "__import__('os').system('touch /tmp/pwned')";

export function formulaFor(o: FaultOptions): { eval: string; execPython: string } {
  const f = o.formula ?? 'exit';
  if (typeof f === 'object') return { eval: f.eval, execPython: f.exec_python };
  return {
    eval: f === 'exec' ? "require('child_process').execSync('touch /tmp/pwned')" : 'process.exit(1)',
    execPython: PWNED_PYTHON,
  };
}

/** wrongTypes applied to an /ips page object. */
export function wrongTypesPage(page: { header: unknown; body: Record<string, unknown>[] }, variant: 'fields' | 'body'): unknown {
  if (variant === 'body') return { header: page.header, body: { items: page.body } };
  return {
    header: page.header,
    body: page.body.map((it) => ({ ...it, score: String(it.score), ts: String(it.ts), entry_ts: String(it.entry_ts), ...('ip' in it ? { is_network: String(it.is_network) } : {}) })),
  };
}

/** wrongTypes applied to an E7 agent list. */
export function wrongTypesAgents(list: Record<string, unknown>[]): unknown {
  return list.map((a) => ({
    ...a,
    ts: String(a.ts),
    config: Object.fromEntries(Object.entries((a.config ?? {}) as Record<string, unknown>).map(([k, v]) => [k, { value: v }])),
  }));
}

export const BAD_JSON_BODY = '<html><body><h1>502 Bad Gateway</h1></body></html>\n';
