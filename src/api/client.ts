import { readFileSync } from 'node:fs';
import pRetry from 'p-retry';
import * as z from '../config/zod.js';
import {
  ApiAuthError,
  ApiResponseError,
  ApiStatusError,
  ApiUnreachableError,
  ConfigError,
  WcfError,
  errorMessage,
} from '../errors.js';
import type { Logger } from '../log.js';
import { formatIssues } from '../config/schema.js';
import { escapeControls } from '../util/terminal-text.js';
import { CycleDeadline, RequestDeadline } from './deadline.js';
import { HttpTransport, type TransportResponse } from './http.js';
import { phaseOf, phaseText } from './transport-types.js';
import { ValidatorCache, conditionalAnswer } from './validators.js';
import { ACCEPT_ENCODING, encodeBody, readBody, takesGzipBodies } from './content-coding.js';
import { CycleDeadlineError, describeNetworkError, isRetryable, notModifiedUnkept, serverMessage, tlsVerifyCode } from './failures.js';

export { tlsVerifyCode };

export interface ClientOptions {
  baseUrl: string;
  token: string;
  authScheme: 'bearer' | 'raw';
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  /** Overall limit of one request (connect, headers, whole body); default 2 x requestTimeoutMs. */
  requestDeadlineMs?: number;
  /** Bulk answers (feed pages) may pass requestDeadlineMs while arriving at this rate or faster; 0 = never. */
  minBytesPerSecond?: number;
  retries: number;
  maxResponseBytes: number;
  caFile?: string | undefined;
  proxy?: string | undefined;
  userAgent: string;
  logger: Logger;
  /** Base delay of the first retry; tests shorten it. */
  retryMinDelayMs?: number;
  /** Observer called once per attempt (metrics). Must not throw; errors are ignored. */
  onRequest?: RequestObserver;
}

/** What the observer learns about one attempt. `status` is absent when no answer came (network error). */
export interface RequestInfo {
  route: string;
  method: string;
  status?: number;
  errorCode?: WcfError['code'];
  /** The failure's message (where it failed, and why), for a progress line. */
  error?: string;
  durationMs: number;
  /** Body bytes sent and received on the wire (gzip-encoded where they were), for the metrics. */
  sentBytes: number;
  receivedBytes: number;
}
export type RequestObserver = (info: RequestInfo) => void;
type WireBytes = Pick<RequestInfo, 'sentBytes' | 'receivedBytes'>;

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  query?: Record<string, string | number>;
  /** Sent as JSON; a Uint8Array is sent as it is (JSON bytes the caller wrote, e.g. the state report). */
  body?: unknown;
  auth?: boolean;
  /** Status codes answered with `undefined` instead of an error (e.g. 404 for a deleted agent). */
  allowStatus?: readonly number[];
  /** Retry this call (safe for GET; the state report is retried too since it is idempotent). */
  retry?: boolean;
  /**
   * Fast validation for large answers: the parsed JSON when it certainly
   * matches `schema`, else undefined and `schema` decides (and words the
   * errors). Must never accept what `schema` rejects.
   */
  accept?: (json: unknown) => unknown;
  /** A large answer: may outlast the request deadline while it arrives at the minimum rate. */
  bulk?: boolean;
  /**
   * Still allowed once the cycle's deadline has passed (the state report, which tells the
   * server the cycle failed; it has its own request deadline).
   */
  afterCycleDeadline?: boolean;
  /**
   * Send `If-None-Match` / `If-Modified-Since` when an earlier answer for this URL carried a
   * validator, and take a 304 as that answer again (validators.ts). For small, repeated answers.
   */
  conditional?: boolean;
}

export interface Response<T> {
  status: number;
  data: T | undefined;
  /** The server's Date header, for clock-skew checks. */
  date: string | undefined;
  /** The server answered 304: `data` is the answer kept from the last time. */
  notModified?: boolean;
}

/** Thin, strict HTTP client: timeouts, keep-alive, bounded jittered retries, size cap, schema validation. */
export class ApiClient {
  private readonly transport: HttpTransport;
  private readonly opts: ClientOptions;
  private readonly base: string;
  private readonly controller = new AbortController();
  private readonly validators = new ValidatorCache();
  /** Request bodies go gzip-encoded: the server said it takes them (an Accept-Encoding header in an answer), and has not refused one. */
  private gzipBodies: 'no' | 'yes' | 'refused' = 'no';
  /** Started and stopped around each cycle by its caller (see src/agent/cycle/bounded-cycle.ts). */
  readonly cycleDeadline = new CycleDeadline();
  /** Per-attempt observer; settable after construction (the daemon attaches metrics to a client built elsewhere). */
  onRequest: RequestObserver | undefined;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.onRequest = opts.onRequest;
    this.base = opts.baseUrl.replace(/\/+$/, '');
    let ca: string | undefined;
    if (opts.caFile) {
      try {
        ca = readFileSync(opts.caFile, 'utf8');
      } catch (err) {
        throw new ConfigError(`cannot read ca_file ${opts.caFile}: ${(err as Error).message}`, [], { cause: err });
      }
    }
    this.transport = new HttpTransport({ connectTimeoutMs: opts.connectTimeoutMs, idleTimeoutMs: opts.requestTimeoutMs, ca, proxy: opts.proxy });
  }

  get baseUrl(): string {
    return this.base;
  }

  /** Abort every request in flight and refuse new ones (daemon shutdown). */
  abort(): void {
    this.controller.abort(new Error('agent is stopping'));
  }

  get aborted(): boolean {
    return this.controller.signal.aborted;
  }

  /** Closes the client's connections (calls still running fail). */
  async close(): Promise<void> {
    this.transport.close();
  }

  /** Call a route and validate the JSON answer with `schema`. */
  async call<S extends z.ZodMiniType>(route: string, schema: S | null, options: CallOptions = {}): Promise<Response<z.infer<S>>> {
    const attempt = () => this.observed(route, schema, options);
    if (options.retry === false || this.opts.retries === 0) return attempt();
    const signal = options.afterCycleDeadline ? this.controller.signal : AbortSignal.any([this.controller.signal, this.cycleDeadline.signal]);
    const cycle = this.cycleDeadline.signal;
    return pRetry(attempt, {
      retries: this.opts.retries,
      minTimeout: this.opts.retryMinDelayMs ?? 500,
      maxTimeout: 10_000,
      factor: 2,
      randomize: true,
      shouldRetry: ({ error }) => !this.aborted && isRetryable(error),
      signal,
      onFailedAttempt: ({ error, attemptNumber, retriesLeft, retryDelay }) => {
        if (retriesLeft > 0 && !this.aborted && isRetryable(error)) {
          this.opts.logger.warn(
            { route, attempt: attemptNumber, retryInMs: Math.round(retryDelay), code: (error as WcfError).code },
            `API call failed, retrying: ${error.message}`,
          );
        }
      },
    }).catch((err: unknown) => {
      // An abort during the wait between attempts rejects with the signal's plain reason: named here.
      if (err instanceof WcfError) throw err;
      if (this.aborted) throw new ApiUnreachableError(`${route}: aborted, the agent is stopping`, { cause: err });
      if (!options.afterCycleDeadline && cycle.aborted) throw new CycleDeadlineError(`${route}: aborted, ${errorMessage(cycle.reason)}`, { cause: err });
      throw err;
    });
  }

  private url(route: string, query?: Record<string, string | number>): string {
    const u = new URL(this.base + route);
    for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, String(v));
    return u.toString();
  }

  private async observed<S extends z.ZodMiniType>(route: string, schema: S | null, options: CallOptions): Promise<Response<z.infer<S>>> {
    if (!this.onRequest) return this.once(route, schema, options);
    const started = performance.now();
    const method = options.method ?? 'GET';
    const wire: WireBytes = { sentBytes: 0, receivedBytes: 0 };
    try {
      const r = await this.once(route, schema, options, wire);
      this.notify({ route, method, status: r.notModified ? 304 : r.status, durationMs: performance.now() - started, ...wire });
      return r;
    } catch (err) {
      const status = err instanceof ApiAuthError || err instanceof ApiStatusError ? err.status : undefined;
      const errorCode = err instanceof WcfError ? err.code : undefined;
      this.notify({ route, method, status, errorCode, error: errorMessage(err), durationMs: performance.now() - started, ...wire });
      throw err;
    }
  }

  private notify(info: RequestInfo): void {
    try {
      this.onRequest?.(info);
    } catch {
      /* an observer must never break an API call */
    }
  }

  /** One attempt; `wire` (when observed) adds up the body bytes that went each way. */
  private async once<S extends z.ZodMiniType>(route: string, schema: S | null, options: CallOptions, wire?: WireBytes): Promise<Response<z.infer<S>>> {
    const method = options.method ?? 'GET';
    const headers: Record<string, string> = { 'user-agent': this.opts.userAgent, accept: 'application/json', 'accept-encoding': ACCEPT_ENCODING };
    if (options.auth !== false) {
      headers.authorization = this.opts.authScheme === 'raw' ? this.opts.token : `Bearer ${this.opts.token}`;
    }
    let body: string | Uint8Array | undefined;
    if (options.body !== undefined) {
      const encoded = encodeBody(options.body instanceof Uint8Array ? options.body : JSON.stringify(options.body), this.gzipBodies === 'yes');
      body = encoded.body;
      headers['content-type'] = 'application/json';
      if (encoded.encoding) headers['content-encoding'] = encoded.encoding;
      if (wire) wire.sentBytes += typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
    }
    const where = `${method} ${route}`;
    const url = this.url(route, options.query);
    const validators = options.conditional ? this.validators.conditions(url) : {};
    Object.assign(headers, validators);
    const cycle = options.afterCycleDeadline ? undefined : this.cycleDeadline.signal;
    if (cycle?.aborted) throw new CycleDeadlineError(`${where}: not sent, ${errorMessage(cycle.reason)}`);
    const deadlineMs = this.opts.requestDeadlineMs ?? 2 * this.opts.requestTimeoutMs;
    const deadline = new RequestDeadline(
      { deadlineMs, minBytesPerSecond: options.bulk ? (this.opts.minBytesPerSecond ?? 0) : 0 },
      (ms) => new ApiUnreachableError(`${where}: no complete answer after ${ms} ms (request deadline ${deadlineMs} ms${options.bulk ? `, or slower than ${this.opts.minBytesPerSecond} bytes/s` : ''})`),
    );
    const signal = AbortSignal.any([this.controller.signal, deadline.signal, ...(cycle ? [cycle] : [])]);
    // Why a request stopped: the agent stopping, the cycle's or this request's deadline; else undefined (plus how far a proxy tunnel got).
    const stopped = (err: unknown): Error | undefined => {
      const tunnel = (err as { code?: unknown } | undefined)?.code === 'ERR_PROXY_TUNNEL' ? `: ${describeNetworkError(err)}` : '';
      if (this.aborted) return new ApiUnreachableError(`${where}: aborted, the agent is stopping${tunnel}`, { cause: err });
      if (cycle?.aborted) return new CycleDeadlineError(`${where}: aborted, ${errorMessage(cycle.reason)}${tunnel}`, { cause: err });
      if (deadline.expired) return tunnel ? new ApiUnreachableError(`${(deadline.signal.reason as Error).message}${tunnel}`, { cause: err }) : (deadline.signal.reason as Error);
      return undefined;
    };
    try {
      let res: TransportResponse;
      try {
        res = await this.transport.request(new URL(url), { method, headers, body, signal });
      } catch (err) {
        const why = stopped(err);
        if (why) throw why;
        const tls = tlsVerifyCode(err);
        const hint = tls ? ` (the server's TLS certificate is not trusted: set ca_file to the CA that signed it, and check that base_url names a host the certificate covers)` : '';
        // Which step failed and where: `GET /version: DNS lookup of api.example.net failed: ENOTFOUND ...`.
        const at = phaseOf(err);
        throw new ApiUnreachableError(`${where}: ${at ? `${phaseText(at)} failed: ` : ''}${describeNetworkError(err)}${hint}`, { cause: err });
      }
      const date = typeof res.headers.date === 'string' ? res.headers.date : undefined;
      let text: string;
      try {
        text = await readBody(res, where, this.opts.maxResponseBytes, deadline);
      } catch (err) {
        throw stopped(err) ?? err;
      } finally {
        if (wire) wire.receivedBytes += deadline.received; // as the rate limit counts them: a gzip answer's encoded bytes
      }
      if (this.gzipBodies === 'no' && takesGzipBodies(res.headers)) this.gzipBodies = 'yes';
      if (res.statusCode === 415 && headers['content-encoding']) {
        // The server advertised gzip bodies but refuses this one: plain from now on, and this one again.
        this.gzipBodies = 'refused';
        this.opts.logger.info({ route }, 'the API refused a gzip-encoded request body (415): sending request bodies plain from now on');
        return this.once(route, schema, options, wire);
      }
      // A 304 is "unchanged" only where an answer is kept to stand for it; else a clear error.
      if (res.statusCode === 304 && !(options.conditional && this.validators.has(url))) throw notModifiedUnkept(where, Object.keys(validators).length > 0);
      if (options.conditional) return conditionalAnswer(this.validators, url, res, text, date, (status, body, d) => this.interpret(status, body, d, where, schema, options));
      return this.interpret(res.statusCode, text, date, where, schema, options);
    } finally {
      deadline.clear();
    }
  }

  private interpret<S extends z.ZodMiniType>(status: number, text: string, date: string | undefined, where: string, schema: S | null, options: CallOptions): Response<z.infer<S>> {
    if (options.allowStatus?.includes(status)) return { status: status, data: undefined, date };
    if (status === 401 || status === 403) {
      throw new ApiAuthError(status, `${where}: ${status} ${serverMessage(text) ?? 'token refused'} (check token / auth_scheme)`);
    }
    if (status < 200 || status >= 300) {
      throw new ApiStatusError(status, `${where}: HTTP ${status}${serverMessage(text) ? ` (${serverMessage(text)})` : ''}`);
    }
    if (schema === null) return { status: status, data: undefined, date };

    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      // The parser's message quotes the body: escaped, it comes from the server.
      throw new ApiResponseError(`${where}: response is not valid JSON (${escapeControls((err as Error).message)})`, { cause: err, retryable: true });
    }
    const accepted = options.accept?.(json);
    if (accepted !== undefined) return { status: status, data: accepted as z.infer<S>, date };
    const parsed = z.safeParse(schema, json);
    if (!parsed.success) {
      const problems = formatIssues(parsed.error);
      // Issues can quote keys and values the server chose.
      const shown = escapeControls(problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : ''));
      throw new ApiResponseError(`${where}: unexpected response shape: ${shown}`);
    }
    return { status: status, data: parsed.data, date };
  }
}
