/**
 * Threat-intelligence API simulator: programmatic API.
 *
 *   const sim = await startSimulator({ indicators: 5000, seed: 7 });
 *   // config: { base_url: sim.url, token: sim.token, agid: sim.agid }
 *   sim.setFault('http500', { count: 1 });
 *   await sim.close();
 *
 * Not part of the shipped agent; imports nothing from src/.
 */
import type { AddressInfo } from 'node:net';
import { AgentStore, type AgentRecord, type ConfigValue, type DeletedAgentResponse, type ReportEntry } from './agents.js';
import { controlHandler } from './control.js';
import { IndicatorData, type SameTsRun } from './data.js';
import { FaultState, type FaultMode, type FaultOptions } from './faults.js';
import { renderUser } from './render.js';
import { API_PREFIX, RequestLog, SimServer, type CallEntry, type RequestEntry, type ServerStats } from './server.js';
import { Clock, FeedStore, type Decision, type FeedItemLite } from './store.js';
import { FileStore, type AddedFile, type FileRecord } from './files.js';
import { CONDITIONAL_MODES, Conditional, NOT_MODIFIED_QUIRKS, type ConditionalMode, type NotModifiedQuirk } from './conditional.js';
import { MAX_BODY_BYTES } from './http-util.js';
import { UrlData, UrlStore, type UrlRecord } from './urls.js';

export type { AgentRecord, ReportEntry, DeletedAgentResponse } from './agents.js';
export type { SameTsRun } from './data.js';
export { FAULT_MODES, type FaultMode, type FaultOptions } from './faults.js';
export type { CallEntry, RequestEntry } from './server.js';
export type { Decision, FeedItemLite } from './store.js';
export type { UrlRecord } from './urls.js';
export type { ConditionalMode, NotModifiedQuirk } from './conditional.js';
export { TAG_BLACKLISTED, TAG_WHITELISTED } from './urls.js';
export type { AddedFile, FileRecord } from './files.js';
export { DEFAULT_EVAL, DEFAULT_EXEC_PYTHON } from './render.js';
export { DEFAULT_AGENT_CONFIG } from './agents.js';

export interface SimulatorOptions {
  /** false: no 1500-item run sharing one ts (see DataOptions.batchImport); default true. */
  batchImport?: boolean;
  /** 0 (default) = a free port. */
  port?: number;
  host?: string;
  /** Base data size (default 1000). */
  indicators?: number;
  /** URL feed size (default 0; up to 1,000,000 and more, computed lazily). */
  urls?: number;
  seed?: number;
  /** Default 'sim-token'. */
  token?: string;
  /** The agent record created at start (default 'agent-1'). */
  agid?: string;
  /** Initial config of that agent, stored verbatim (numbers or strings). */
  agentConfig?: Partial<Record<'maximum_rules' | 'score_threshold' | 'sync_time' | 'running' | 'version', ConfigValue>>;
  /** Initial clock (epoch s); freezes the clock. Default: real time, running. */
  now?: number;
  /** How E7 answers for a deleted/unknown agid (default '404'). */
  deletedAgentResponse?: DeletedAgentResponse;
  /** Capacity of the `requests` ring (default 10000). */
  requestLogSize?: number;
  /**
   * Conditional answers on GET /ips and GET /feedback?agid= (default none, as the spec shows none);
   * `fixed-etag` plays a cache that keeps each URL's first tag for ever (conditional.ts).
   */
  conditional?: ConditionalMode | null;
  /** With `conditional`: 304s labelled `Content-Encoding: gzip`, or sent to requests without a validator (conditional.ts). */
  notModifiedQuirk?: NotModifiedQuirk | null;
  /** Largest request body taken (default 1 MiB, counted on the wire); larger ones are answered 413. */
  maxBodyBytes?: number;
  /**
   * gzip: answers from 1 KiB gzip-encoded when the request accepts it, and gzip request bodies
   * taken (advertised in every answer's `Accept-Encoding`, RFC 7694). Default off, as the spec shows none.
   */
  compression?: boolean;
  /** Told of every API call once it is answered, with its bytes (the `requests` ring keeps only the last ones). */
  onRequest?: (e: CallEntry) => void;
}

export interface UpsertItem {
  ip: string;
  score?: number;
  /** Default: clock now. */
  ts?: number;
  is_network?: boolean;
  gid?: string;
}

export interface SimStats {
  requests: number;
  /** Bytes of every API call (requests and answers, headers included). */
  bytesIn: number;
  bytesOut: number;
  /** Time spent inside the request handler, summed (ms). */
  handlerMs: number;
}

export interface Simulator {
  /** base_url, ends in /api/v1. */
  readonly url: string;
  /** http://HOST:PORT */
  readonly origin: string;
  readonly token: string;
  readonly agid: string;
  /** Closes all sockets promptly, even those of slow or streaming requests. */
  close(): Promise<void>;
  setFault(mode: FaultMode | null, options?: FaultOptions): void;
  /** Turn conditional answers on (`etag`, `last-modified`, `both`, `fixed-etag`) or off (null). */
  setConditional(mode: ConditionalMode | null): void;
  /** Turn a 304 quirk on (`gzip-label`, `unasked`) or off (null). */
  setNotModifiedQuirk(quirk: NotModifiedQuirk | null): void;
  /** Turn gzip answers and gzip request bodies on or off. */
  setCompression(on: boolean): void;
  /** Answers of the `trickle` fault being sent now. */
  readonly trickling: number;
  /** Every trickled answer in flight sends the rest of its body at once (the fault itself stays as set). */
  finishTrickles(): void;
  readonly clock: { now(): number; set(epoch: number): void; advance(seconds: number): void };
  /** Adds or updates an indicator (new ts = `ts` or clock now; it moves to that place in the feed). */
  upsertIndicator(item: UpsertItem): void;
  /** Removes an indicator from the feed (no-op if absent). */
  removeIndicator(ip: string): void;
  /**
   * Manual decision, as `POST /ips` sets it: the indicator's record gets a new ts (now); an ip
   * not in the feed is first added (score 1) unless decision is -1.
   */
  setDecision(ip: string, decision: Decision, ttl?: number): void;
  /** Merges config values VERBATIM into the agent's record (created if missing). */
  setAgentConfig(agid: string, cfg: Record<string, string | number>): void;
  getAgent(agid: string): AgentRecord | undefined;
  deleteAgent(agid: string): void;
  setDeletedAgentResponse(mode: DeletedAgentResponse): void;
  /** Every POST /feedback that passed validation (status 200 merged, 404 record missing). */
  readonly reports: ReadonlyArray<ReportEntry>;
  /** Bounded ring of API requests (not /version or /_sim), oldest first. */
  readonly requests: ReadonlyArray<RequestEntry>;
  clearRequests(): void;
  /** Bounded ring of answered API calls with their bytes (headers included), oldest first; cleared with clearRequests. */
  readonly calls: ReadonlyArray<CallEntry>;
  /** Every indicator currently in the feed, in feed order, computed lazily. */
  indicators(filter?: 0 | 1 | 2 | 3): Iterable<FeedItemLite>;
  stats(): SimStats;
  resetStats(): void;
  /** Adds or re-stamps a URL record (ts = given or now). */
  upsertUrl(url: string, fields?: { score?: number; ts?: number; tags?: string[] }): void;
  /** What PUT /urls/{url} does: re-stamps the URL and sets its decision tags. */
  decideUrl(url: string, decision: Decision): void;
  /** The URL's current record, if any. */
  urlRecord(url: string): UrlRecord | undefined;
  /** Every URL record in feed order (lazily). */
  urlRecords(): Iterable<UrlRecord>;
  /** A file record GET /files/{digest} finds by any of its digests (with `deep`, only through deep=YES). */
  addFile(f: AddedFile): FileRecord;
  readonly data: { readonly sameTsRuns: ReadonlyArray<SameTsRun>; readonly count: number; readonly start: number; readonly ownGid: string };
}

function checkUpsert(item: UpsertItem): void {
  if (item.score !== undefined && !Number.isFinite(item.score)) throw new TypeError('score must be a finite number');
  if (item.ts !== undefined && !(Number.isSafeInteger(item.ts) && item.ts >= 0)) throw new TypeError('ts must be a non-negative integer');
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const clock = new Clock(opts.now);
  const data = new IndicatorData({ seed: opts.seed ?? 1, count: opts.indicators ?? 1000, start: clock.now(), batchImport: opts.batchImport });
  const feed = new FeedStore(data, clock);
  const urls = new UrlStore(new UrlData({ seed: opts.seed ?? 1, count: opts.urls ?? 0, start: clock.now() }), () => clock.now());
  const files = new FileStore(opts.seed ?? 1, () => clock.now());
  const agents = new AgentStore(data.ownGid);
  agents.deletedAgentResponse = opts.deletedAgentResponse ?? '404';
  const agid = opts.agid ?? 'agent-1';
  agents.setConfig(agid, (opts.agentConfig ?? {}) as Record<string, ConfigValue>);
  const faults = new FaultState();
  const requests = new RequestLog(opts.requestLogSize ?? 10_000);
  const calls = new RequestLog<CallEntry>(opts.requestLogSize ?? 10_000);
  const stats: ServerStats = { requests: 0, handlerNs: 0n, bytesIn: 0, bytesOut: 0 };
  if (opts.conditional && !CONDITIONAL_MODES.includes(opts.conditional)) throw new TypeError(`conditional must be one of ${CONDITIONAL_MODES.join(', ')}`);
  if (opts.notModifiedQuirk && !NOT_MODIFIED_QUIRKS.includes(opts.notModifiedQuirk)) throw new TypeError(`notModifiedQuirk must be one of ${NOT_MODIFIED_QUIRKS.join(', ')}`);
  const conditional = new Conditional(opts.conditional ?? null, opts.notModifiedQuirk ?? null);
  const compression = { on: opts.compression ?? false };
  const token = opts.token ?? 'sim-token';

  let control: ReturnType<typeof controlHandler> | undefined;
  const server = new SimServer({
    token,
    feed,
    urls,
    files,
    agents,
    faults,
    clock,
    requests,
    calls,
    stats,
    conditional,
    compression,
    maxBodyBytes: opts.maxBodyBytes ?? MAX_BODY_BYTES,
    onRequest: opts.onRequest,
    userJson: renderUser(data.ownGid),
    control: (m, r, q, b) => control!(m, r, q, b),
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const addr = server.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const origin = `http://${host}:${addr.port}`;

  const sim: Simulator = {
    url: origin + API_PREFIX,
    origin,
    token,
    agid,
    close: () => server.close(),
    setFault: (mode, options) => faults.set(mode, options),
    setConditional(mode) {
      if (mode !== null && !CONDITIONAL_MODES.includes(mode)) throw new TypeError(`conditional must be one of ${CONDITIONAL_MODES.join(', ')} or null`);
      conditional.mode = mode;
    },
    setNotModifiedQuirk(quirk) {
      if (quirk !== null && !NOT_MODIFIED_QUIRKS.includes(quirk)) throw new TypeError(`notModifiedQuirk must be one of ${NOT_MODIFIED_QUIRKS.join(', ')} or null`);
      conditional.quirk = quirk;
    },
    setCompression(on) {
      compression.on = on;
    },
    get trickling() {
      return server.trickling;
    },
    finishTrickles: () => server.finishTrickles(),
    clock: {
      now: () => clock.now(),
      set: (e) => clock.set(e),
      advance: (s) => clock.advance(s),
    },
    upsertIndicator(item) {
      checkUpsert(item);
      feed.upsert(item.ip, { score: item.score, ts: item.ts, is_network: item.is_network, gid: item.gid });
    },
    removeIndicator: (ip) => void feed.remove(ip),
    setDecision(ip, decision, ttl) {
      if (decision !== -1 && decision !== 0 && decision !== 1) throw new TypeError('decision must be -1, 0 or 1');
      if (ttl !== undefined && !Number.isFinite(ttl)) throw new TypeError('ttl must be a finite number');
      // The contract: a decision gives the record a new ts, so incremental polls see it.
      if (feed.has(ip)) feed.upsert(ip, {});
      else if (decision !== -1) feed.upsert(ip, { score: 1 });
      feed.setDecision(ip, decision, ttl);
    },
    setAgentConfig: (id, cfg) => agents.setConfig(id, cfg),
    getAgent: (id) => agents.get(id),
    deleteAgent: (id) => void agents.delete(id),
    setDeletedAgentResponse(mode) {
      if (mode !== '404' && mode !== 'empty') throw new TypeError("mode must be '404' or 'empty'");
      agents.deletedAgentResponse = mode;
    },
    get reports() {
      return agents.reports;
    },
    get requests() {
      return requests.toArray();
    },
    clearRequests: () => {
      requests.clear();
      calls.clear();
    },
    get calls() {
      return calls.toArray();
    },
    indicators(filter = 0) {
      return {
        *[Symbol.iterator]() {
          const now = clock.now();
          for (const r of feed.refs(filter, 0)) yield feed.lite(r, now);
        },
      };
    },
    stats: () => ({ requests: stats.requests, handlerMs: Number(stats.handlerNs) / 1e6, bytesIn: stats.bytesIn, bytesOut: stats.bytesOut }),
    upsertUrl(url, fields = {}) {
      if (fields.score !== undefined && !Number.isFinite(fields.score)) throw new TypeError('score must be a finite number');
      urls.upsert(url, fields);
    },
    decideUrl(url, decision) {
      if (decision !== -1 && decision !== 0 && decision !== 1) throw new TypeError('decision must be -1, 0 or 1');
      urls.decide(url, decision);
    },
    urlRecord: (url) => urls.get(url),
    urlRecords: () => urls.from(0),
    addFile: (f) => files.add(f),
    resetStats() {
      stats.requests = 0;
      stats.handlerNs = 0n;
      stats.bytesIn = 0;
      stats.bytesOut = 0;
    },
    data: {
      sameTsRuns: data.sameTsRuns,
      count: data.count,
      start: data.start,
      ownGid: data.ownGid,
    },
  };
  control = controlHandler(sim);
  return sim;
}
