/**
 * The HTTP server: routing, auth, validation and fault application. Route handlers
 * return a JSON string; faults either replace the handling (pre) or transform the
 * successful answer (post). Control routes under /_sim/ are delegated to control.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AgentStore } from './agents.js';
import { BAD_JSON_BODY, formulaFor, wrongTypesAgents, wrongTypesPage, type ActiveFault, type FaultState } from './faults.js';
import { Waiter, acceptsGzip, readJsonBody, send, sendJson, sendMessage, writeChunk } from './http-util.js';
import { countBytes, type Conditional } from './conditional.js';
import { formatAddress } from './ipspace.js';
import { renderHeader, renderItem, renderPage, type ItemView } from './render.js';
import type { Clock, FeedStore } from './store.js';
import type { FileStore } from './files.js';
import { renderUrlPage } from './url-render.js';
import type { UrlStore } from './urls.js';
import { ValidationError, configBody, decisionBody, digestParam, feedQuery, ipReport, stateReport, urlParam, urlQuery } from './validate.js';

export const API_PREFIX = '/api/v1';
export const VERSION_BODY = JSON.stringify({ version: '4.18.0', name: 'wcf-simulator' });
const API_ROUTES = new Set(['GET /ips', 'POST /ips', 'GET /feedback', 'POST /feedback', 'POST /feedback/config', 'DELETE /feedback', 'GET /urls']);
/** Routes with a path parameter: the route name used for faults and the request log. */
const PARAM_ROUTES: Record<string, string> = { 'PUT /urls/': 'PUT /urls', 'GET /files/': 'GET /files' };

export interface RequestEntry {
  method: string;
  path: string;
  query: Record<string, string>;
  at: number;
  /** HTTP status sent; 0 when the request got no answer (reset, client gone). */
  status: number;
  /** The request carried a validator (`If-None-Match` or `If-Modified-Since`). */
  validators: boolean;
}

/** An answered API call with its bytes: the request and its answer, headers included. */
export interface CallEntry extends RequestEntry {
  bytesIn: number;
  bytesOut: number;
}

/** Bounded ring of API requests (not /_sim/), oldest first. */
export class RequestLog<E = RequestEntry> {
  private readonly buf: E[] = [];
  private head = 0;
  constructor(readonly capacity = 10_000) {}
  push(e: E): void {
    if (this.buf.length < this.capacity) this.buf.push(e);
    else {
      this.buf[this.head] = e;
      this.head = (this.head + 1) % this.capacity;
    }
  }
  toArray(): E[] {
    return [...this.buf.slice(this.head), ...this.buf.slice(0, this.head)];
  }
  clear(): void {
    this.buf.length = 0;
    this.head = 0;
  }
}

export interface ServerStats {
  requests: number;
  /** Bytes of every API call (not /version or /_sim), requests and answers, headers included. */
  bytesIn: number;
  bytesOut: number;
  /** Time spent inside the request handler (synchronous parts), ns. */
  handlerNs: bigint;
}

export interface SimContext {
  token: string;
  feed: FeedStore;
  urls: UrlStore;
  files: FileStore;
  agents: AgentStore;
  faults: FaultState;
  clock: Clock;
  userJson: string;
  requests: RequestLog;
  /** The answered API calls with their bytes (a ring like `requests`). */
  calls: RequestLog<CallEntry>;
  stats: ServerStats;
  conditional: Conditional;
  /** gzip answers (when asked) and gzip request bodies (advertised with Accept-Encoding, RFC 7694). */
  compression: { on: boolean };
  /** Largest request body taken; a larger one is answered 413. */
  maxBodyBytes: number;
  /** Told of every API call once it is answered (the fleet benchmark counts with it). */
  onRequest?: ((e: CallEntry) => void) | undefined;
  control(method: string, route: string, q: URLSearchParams, body: unknown): { status: number; value: unknown };
}

type Answer = { status: number; body: string; ascii?: boolean; headers?: Record<string, string> };
const ok = (body: string, ascii = false): Answer => ({ status: 200, body, ascii });
const msg = (status: number, message: string): Answer => ({ status, body: JSON.stringify({ message }) });

function checkAuth(req: IncomingMessage, token: string): Answer | null {
  const h = req.headers.authorization?.trim() ?? '';
  const m = /^Bearer(?:\s+(.*))?$/i.exec(h);
  const given = m ? (m[1] ?? '').trim() : h;
  if (given === '') return msg(401, 'missing token');
  return given === token ? null : msg(403, 'invalid token');
}

export class SimServer {
  readonly server: Server;
  private readonly waiter = new Waiter();
  private closing = false;
  /** Trickled answers being sent now. */
  trickling = 0;
  /** Bumped by finishTrickles(): a trickle started before sends the rest of its answer at once. */
  private trickleRound = 0;

  constructor(private readonly ctx: SimContext) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendMessage(res, 500, `simulator error: ${String(err)}`);
        else res.destroy();
      });
    });
    this.server.keepAliveTimeout = 30_000;
  }

  async close(): Promise<void> {
    this.closing = true;
    this.waiter.cancelAll();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { ctx } = this;
    let mark = process.hrtime.bigint();
    const pause = (): void => {
      ctx.stats.handlerNs += process.hrtime.bigint() - mark;
    };
    const resume = (): void => {
      mark = process.hrtime.bigint();
    };
    ctx.stats.requests++;
    // Every answer moves the socket's counters on; only API calls are charged with their bytes.
    let counted: RequestEntry | undefined;
    countBytes(req, res, (bytesIn, bytesOut) => {
      if (!counted) return;
      const call: CallEntry = { ...counted, status: res.statusCode, bytesIn, bytesOut };
      ctx.stats.bytesIn += bytesIn;
      ctx.stats.bytesOut += bytesOut;
      ctx.calls.push(call);
      ctx.onRequest?.(call);
    });
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname;
    try {
      if (path === `${API_PREFIX}/version`) return method === 'GET' ? send(res, 200, VERSION_BODY) : sendMessage(res, 404, 'not found');
      if (path.startsWith('/_sim/')) {
        const denied = checkAuth(req, ctx.token);
        if (denied) return send(res, denied.status, denied.body);
        pause();
        const body = await readJsonBody(req);
        resume();
        if (!body.ok) return sendMessage(res, body.status, body.message);
        const r = ctx.control(method, path.slice(5), url.searchParams, body.value);
        return sendJson(res, r.status, r.value);
      }
      const rel = path.startsWith(`${API_PREFIX}/`) ? path.slice(API_PREFIX.length) : '';
      let route = `${method} ${rel}`;
      let param: string | undefined;
      for (const [prefix, name] of Object.entries(PARAM_ROUTES)) {
        if (route.startsWith(prefix) && route.length > prefix.length && !route.slice(prefix.length).includes('/')) {
          param = route.slice(prefix.length);
          route = name;
        }
      }
      if (param === undefined && !API_ROUTES.has(route)) return sendMessage(res, 404, 'not found');
      const validators = req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined;
      const entry: RequestEntry = { method, path, query: Object.fromEntries(url.searchParams), at: ctx.clock.now(), status: 0, validators };
      ctx.requests.push(entry);
      res.on('finish', () => {
        entry.status = res.statusCode;
      });
      counted = entry;
      if (ctx.compression.on) res.setHeader('accept-encoding', 'gzip');
      const denied = checkAuth(req, ctx.token);
      if (denied) return send(res, denied.status, denied.body);
      let body: unknown;
      if (method === 'POST' || method === 'PUT') {
        pause();
        const b = await readJsonBody(req, ctx.maxBodyBytes, ctx.compression.on);
        resume();
        if (!b.ok) return sendMessage(res, b.status, b.message);
        body = b.value;
      }
      const fault = ctx.faults.take(route, entry.query);
      if (fault) {
        switch (fault.mode) {
          case 'reset':
            res.socket?.destroy();
            return;
          case 'http500':
            return sendMessage(res, fault.options.status ?? 500, fault.options.message ?? 'simulated internal error');
          case 'http429':
            return sendMessage(res, 429, 'simulated rate limit');
          case 'unauthorized':
            return sendMessage(res, 401, 'token expired');
          case 'badJson':
            return send(res, 200, BAD_JSON_BODY);
          case 'slow': {
            pause();
            const waited = await this.waiter.wait(fault.options.delayMs ?? 2000, res);
            resume();
            if (!waited || this.closing) return;
            break;
          }
          case 'oversized':
            if (fault.options.oversize === 'bytes') {
              pause();
              await this.streamHuge(res, route, fault.options.sizeBytes ?? 64 * 1024 * 1024, url.searchParams);
              resume();
              return;
            }
        }
      }
      let answer: Answer;
      try {
        answer = this.dispatch(route, url.searchParams, body, fault, param);
      } catch (e) {
        if (!(e instanceof ValidationError)) throw e;
        answer = msg(400, e.message);
      }
      if (fault && answer.status === 200) return this.postFault(res, route, answer.body, fault);
      if (answer.status === 200 && (route === 'GET /ips' || (route === 'GET /feedback' && url.searchParams.has('agid')))) {
        const c = ctx.conditional.check(path + url.search, answer.body, req, ctx.clock.now());
        if (c?.notModified) {
          res.writeHead(304, c.headers);
          res.end();
          return;
        }
        if (c) answer.headers = c.headers;
      }
      send(res, answer.status, answer.body, 'application/json', answer.ascii, answer.headers, ctx.compression.on && acceptsGzip(req));
    } finally {
      pause();
    }
  }

  private dispatch(route: string, q: URLSearchParams, body: unknown, fault: ActiveFault | null, param?: string): Answer {
    const { ctx } = this;
    const agidParam = (required: boolean): string | undefined => {
      const a = q.get('agid');
      if (a === null && !required) return undefined;
      if (!a) throw new ValidationError('agid', 'required (non-empty query parameter)');
      return a;
    };
    switch (route) {
      case 'GET /ips':
        return ok(this.feedPage(q, fault), true);
      case 'POST /ips': {
        const r = ipReport(body, ctx.clock.now());
        const existed = ctx.feed.has(r.ip);
        ctx.feed.upsert(r.ip, { score: existed ? undefined : Math.round(r.confidence * 1000) / 100, source: r.source, notes: r.notes }, ctx.feed.data.ownGid);
        ctx.feed.setDecision(r.ip, r.decision, r.ttl);
        return ok('');
      }
      case 'GET /feedback': {
        const agid = agidParam(false);
        if (agid === undefined) return ok(JSON.stringify(ctx.agents.list()));
        const rec = ctx.agents.get(agid);
        if (rec) return ok(JSON.stringify([rec]));
        return ctx.agents.deletedAgentResponse === 'empty' ? ok('[]') : msg(404, 'agent not found');
      }
      case 'POST /feedback': {
        const agid = agidParam(true)!;
        const report = stateReport(body, agid);
        return ctx.agents.report(agid, report, ctx.clock.now()) === 200 ? ok('{}') : msg(404, 'agent not found');
      }
      case 'POST /feedback/config': {
        const agid = agidParam(true)!;
        ctx.agents.setConfigFromApi(agid, configBody(body));
        return ok('{}');
      }
      case 'DELETE /feedback':
        return ctx.agents.delete(agidParam(true)!) ? ok('{}') : msg(404, 'agent not found');
      case 'GET /urls':
        return ok(this.urlPage(q, fault));
      case 'PUT /urls': {
        const target = urlParam(param!);
        ctx.urls.decide(target, decisionBody(body));
        return ok('');
      }
      case 'GET /files': {
        const { digest, deep } = digestParam(param!, q);
        const rec = ctx.files.find(digest, deep);
        return rec ? ok(JSON.stringify(rec)) : msg(404, 'file not found');
      }
    }
    return msg(404, 'not found');
  }

  private feedPage(q: URLSearchParams, fault: ActiveFault | null): string {
    const { feed, clock } = this.ctx;
    const { limit, filter, ts, full } = feedQuery(q);
    const over = fault?.mode === 'oversized';
    if (fault?.mode === 'endless') return this.endlessPage(ts, limit);
    const views: ItemView[] = (fault?.mode === 'empty' ? [] : feed.page(filter, ts, over ? limit * 2 : limit)).map((r) => feed.view(r));
    if (fault?.mode === 'futureTs' && views.length < limit) {
      const at = clock.now() + (fault.options.aheadSeconds ?? 10 * 365 * 86_400);
      views.push({ gid: feed.data.orgGids[1]!, ip: '203.0.113.77', ts: at, entryTs: at, isNetwork: false, score: 9.5, infoSeed: 77 });
    }
    if (over) {
      const last = views.at(-1)?.ts ?? clock.now();
      for (let k = 0; views.length <= limit; k++) {
        const ip = formatAddress(0xcb007100 + (k % 256)); // 203.0.113.0/24
        views.push({ gid: feed.data.orgGids[1]!, ip, ts: last, entryTs: last, isNetwork: false, score: 9.5, infoSeed: k });
      }
    }
    const formula = fault?.mode === 'formulaCode' ? formulaFor(fault.options) : undefined;
    const header = renderHeader({ now: clock.now(), pageSize: limit, userJson: this.ctx.userJson, eval: formula?.eval, execPython: formula?.execPython });
    return renderPage(header, views, (v) => renderItem(v, full));
  }

  /** endless: a full page of new addresses (in 11.0.0.0/8, public) stamped ts + 1, whatever was asked. */
  private endlessPage(ts: number, limit: number): string {
    const { feed, clock } = this.ctx;
    const views: ItemView[] = [];
    for (let k = 0; k < limit; k++) {
      const n = ((ts * limit + k) >>> 0) % 0x1000000;
      views.push({ gid: feed.data.orgGids[1]!, ip: formatAddress(0x0b000000 + n), ts: ts + 1, entryTs: ts + 1, isNetwork: false, score: 5, infoSeed: k });
    }
    const header = renderHeader({ now: clock.now(), pageSize: limit, userJson: this.ctx.userJson });
    return renderPage(header, views, (v) => renderItem(v, false));
  }

  /** trickle: the answer a few bytes at a time, each write `delayMs` after the last. */
  private async trickle(res: ServerResponse, body: string, o: { delayMs?: number; trickleBytes?: number }): Promise<void> {
    const buf = Buffer.from(body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': buf.length });
    const step = Math.max(1, o.trickleBytes ?? 1);
    const round = this.trickleRound;
    this.trickling++;
    try {
      for (let off = 0; off < buf.length; off += step) {
        if (!(await this.waiter.wait(o.delayMs ?? 500, res)) || this.closing || res.destroyed) return;
        if (this.trickleRound !== round) {
          res.end(buf.subarray(off));
          return;
        }
        res.write(buf.subarray(off, off + step));
      }
      res.end();
    } finally {
      this.trickling--;
    }
  }

  /** Trickled answers in flight send the rest at once (at their next step). */
  finishTrickles(): void {
    this.trickleRound++;
  }

  private urlPage(q: URLSearchParams, fault: ActiveFault | null): string {
    const { urls, clock } = this.ctx;
    const { ts, limit } = urlQuery(q);
    const over = fault?.mode === 'oversized';
    const recs = fault?.mode === 'empty' ? [] : urls.page(ts, over ? limit * 2 : limit);
    while (over && recs.length <= limit) recs.push({ url: `https://padding-${recs.length}.example/`, score: 9, ts, entryTs: ts, tags: [], totalReports: 1, totalMembers: 1 });
    return renderUrlPage({ now: clock.now(), limit, fromTs: ts, userJson: this.ctx.userJson }, recs);
  }

  private postFault(res: ServerResponse, route: string, body: string, fault: ActiveFault): void {
    if (fault.mode === 'trickle') {
      void this.trickle(res, body, fault.options);
      return;
    }
    if (fault.mode === 'wrongTypes') {
      const v = JSON.parse(body) as never;
      const out = route === 'GET /feedback' ? wrongTypesAgents(v) : wrongTypesPage(v, fault.options.wrongTypes ?? 'fields');
      return sendJson(res, 200, out);
    }
    if (fault.mode === 'truncated') {
      const buf = Buffer.from(body);
      const part = buf.subarray(0, Math.max(1, Math.floor(buf.length / 2)));
      if (fault.options.truncate === 'destroy') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': buf.length });
        res.write(part, () => res.destroy());
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': part.length });
      res.end(part);
      return;
    }
    send(res, 200, body, 'application/json', route === 'GET /ips');
  }

  /** oversized/bytes: a valid JSON body of about `size` bytes, streamed with back-pressure. */
  private async streamHuge(res: ServerResponse, route: string, size: number, q: URLSearchParams): Promise<void> {
    const { feed, clock, agents } = this.ctx;
    res.writeHead(200, { 'content-type': 'application/json' });
    let item: (k: number) => string;
    let open: string;
    let closeText: string;
    if (route === 'GET /ips') {
      const limit = Number(q.get('limit') ?? 1000) || 1000;
      open = `{"header":${renderHeader({ now: clock.now(), pageSize: limit, userJson: this.ctx.userJson })},"body":[`;
      closeText = ']}';
      const n = feed.data.count;
      item = (k) =>
        n > 0
          ? renderItem(feed.view(k % n), true)
          : renderItem({ gid: feed.data.ownGid, ip: formatAddress(0xcb007100 + (k % 256)), ts: clock.now(), entryTs: clock.now(), isNetwork: false, score: 5, infoSeed: k }, true);
    } else {
      open = '[';
      closeText = ']';
      const rec = JSON.stringify(agents.list()[0] ?? { agid: 'x', config: {} });
      item = () => rec;
    }
    let written = 0;
    let k = 0;
    let chunk = open;
    while (written < size && !this.closing) {
      while (chunk.length < 65_536 && written + chunk.length < size) chunk += (k > 0 ? ',' : '') + item(k++);
      written += chunk.length;
      if (!(await writeChunk(res, chunk))) return;
      chunk = '';
    }
    if (!this.closing && !res.destroyed) res.end(chunk + closeText);
  }
}
