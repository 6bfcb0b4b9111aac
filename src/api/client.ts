import { isAscii } from 'node:buffer';
import { readFileSync } from 'node:fs';
import pRetry from 'p-retry';
import { Agent, EnvHttpProxyAgent, ProxyAgent, request, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  ApiAuthError,
  ApiResponseError,
  ApiStatusError,
  ApiUnreachableError,
  ConfigError,
  WcfError,
} from '../errors.js';
import type { Logger } from '../log.js';
import { formatIssues } from '../config/schema.js';

export interface ClientOptions {
  baseUrl: string;
  token: string;
  authScheme: 'bearer' | 'raw';
  connectTimeoutMs: number;
  requestTimeoutMs: number;
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
  durationMs: number;
}
export type RequestObserver = (info: RequestInfo) => void;

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  query?: Record<string, string | number>;
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
}

export interface Response<T> {
  status: number;
  data: T | undefined;
  /** The server's Date header, for clock-skew checks. */
  date: string | undefined;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED',
]);

/** The first `code` along the error's cause chain (a few levels: undici wraps) that `wanted` accepts. */
function codeInChain(err: unknown, wanted: (code: string) => boolean): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === 'object'; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && wanted(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function errorCodeOf(err: unknown): string | undefined {
  return codeInChain(err, (c) => NETWORK_CODES.has(c));
}

/**
 * OpenSSL/Node codes of a certificate the agent does not trust. Not transient: retrying
 * only delays the error, so these fail at once, with a hint (ca_file, the server's name).
 */
const TLS_VERIFY_CODES = /^(ERR_TLS_CERT_ALTNAME_INVALID|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|CERT_UNTRUSTED|CERT_REJECTED|CERT_SIGNATURE_FAILURE|INVALID_CA|HOSTNAME_MISMATCH)$/;

export function tlsVerifyCode(err: unknown): string | undefined {
  return codeInChain(err, (c) => TLS_VERIFY_CODES.test(c));
}

function isRetryable(err: unknown): boolean {
  if (err instanceof ApiUnreachableError) return tlsVerifyCode(err) === undefined;
  if (err instanceof ApiStatusError) return err.status >= 500 || err.status === 429;
  // Truncated or garbled bodies are usually a transient proxy/server problem.
  if (err instanceof ApiResponseError) return err.retryable;
  return false;
}

/** Thin, strict HTTP client: timeouts, keep-alive, bounded jittered retries, size cap, schema validation. */
export class ApiClient {
  private readonly dispatcher: Dispatcher;
  private readonly opts: ClientOptions;
  private readonly base: string;
  private readonly controller = new AbortController();
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
    // TLS verification stays on; a custom CA is added, never a bypass.
    // rejectUnauthorized explicitly, so NODE_TLS_REJECT_UNAUTHORIZED=0 in an environment cannot turn checks off.
    const connect = { timeout: opts.connectTimeoutMs, rejectUnauthorized: true, ...(ca ? { ca } : {}) };
    const common = {
      connect,
      headersTimeout: opts.requestTimeoutMs,
      bodyTimeout: opts.requestTimeoutMs,
      keepAliveTimeout: 30_000,
    };
    if (opts.proxy) this.dispatcher = new ProxyAgent({ uri: opts.proxy, ...common, requestTls: connect });
    else if (process.env.HTTPS_PROXY || process.env.https_proxy || process.env.HTTP_PROXY || process.env.http_proxy)
      this.dispatcher = new EnvHttpProxyAgent({ ...common, requestTls: connect });
    else this.dispatcher = new Agent(common);
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

  async close(): Promise<void> {
    if (this.aborted) await this.dispatcher.destroy();
    else await this.dispatcher.close();
  }

  /** Call a route and validate the JSON answer with `schema`. */
  async call<S extends z.ZodType>(route: string, schema: S | null, options: CallOptions = {}): Promise<Response<z.infer<S>>> {
    const attempt = () => this.observed(route, schema, options);
    if (options.retry === false || this.opts.retries === 0) return attempt();
    return pRetry(attempt, {
      retries: this.opts.retries,
      minTimeout: this.opts.retryMinDelayMs ?? 500,
      maxTimeout: 10_000,
      factor: 2,
      randomize: true,
      shouldRetry: ({ error }) => !this.aborted && isRetryable(error),
      signal: this.controller.signal,
      onFailedAttempt: ({ error, attemptNumber, retriesLeft, retryDelay }) => {
        if (retriesLeft > 0 && !this.aborted && isRetryable(error)) {
          this.opts.logger.warn(
            { route, attempt: attemptNumber, retryInMs: Math.round(retryDelay), code: (error as WcfError).code },
            `API call failed, retrying: ${error.message}`,
          );
        }
      },
    });
  }

  private url(route: string, query?: Record<string, string | number>): string {
    const u = new URL(this.base + route);
    for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, String(v));
    return u.toString();
  }

  private async observed<S extends z.ZodType>(route: string, schema: S | null, options: CallOptions): Promise<Response<z.infer<S>>> {
    if (!this.onRequest) return this.once(route, schema, options);
    const started = performance.now();
    const method = options.method ?? 'GET';
    try {
      const r = await this.once(route, schema, options);
      this.notify({ route, method, status: r.status, durationMs: performance.now() - started });
      return r;
    } catch (err) {
      const status = err instanceof ApiAuthError || err instanceof ApiStatusError ? err.status : undefined;
      const errorCode = err instanceof WcfError ? err.code : undefined;
      this.notify({ route, method, status, errorCode, durationMs: performance.now() - started });
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

  private async once<S extends z.ZodType>(route: string, schema: S | null, options: CallOptions): Promise<Response<z.infer<S>>> {
    const method = options.method ?? 'GET';
    const headers: Record<string, string> = { 'user-agent': this.opts.userAgent, accept: 'application/json' };
    if (options.auth !== false) {
      headers.authorization = this.opts.authScheme === 'raw' ? this.opts.token : `Bearer ${this.opts.token}`;
    }
    let body: string | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] = 'application/json';
    }
    const where = `${method} ${route}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(this.url(route, options.query), { method, headers, body, dispatcher: this.dispatcher, signal: this.controller.signal });
    } catch (err) {
      if (this.aborted) throw new ApiUnreachableError(`${where}: aborted, the agent is stopping`, { cause: err });
      const tls = tlsVerifyCode(err);
      const hint = tls ? ` (the server's TLS certificate is not trusted: set ca_file to the CA that signed it, and check that base_url names a host the certificate covers)` : '';
      throw new ApiUnreachableError(`${where}: ${describeNetworkError(err)}${hint}`, { cause: err });
    }
    const date = typeof res.headers.date === 'string' ? res.headers.date : undefined;
    const text = await this.readCapped(res, where);

    if (options.allowStatus?.includes(res.statusCode)) return { status: res.statusCode, data: undefined, date };
    if (res.statusCode === 401 || res.statusCode === 403) {
      throw new ApiAuthError(res.statusCode, `${where}: ${res.statusCode} ${serverMessage(text) ?? 'token refused'} (check token / auth_scheme)`);
    }
    if (res.statusCode < 200 || res.statusCode >= 300) {
      throw new ApiStatusError(res.statusCode, `${where}: HTTP ${res.statusCode}${serverMessage(text) ? ` (${serverMessage(text)})` : ''}`);
    }
    if (schema === null) return { status: res.statusCode, data: undefined, date };

    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new ApiResponseError(`${where}: response is not valid JSON (${(err as Error).message})`, { cause: err, retryable: true });
    }
    const accepted = options.accept?.(json);
    if (accepted !== undefined) return { status: res.statusCode, data: accepted as z.infer<S>, date };
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const problems = formatIssues(parsed.error);
      const shown = problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : '');
      throw new ApiResponseError(`${where}: unexpected response shape: ${shown}`);
    }
    return { status: res.statusCode, data: parsed.data, date };
  }

  private async readCapped(res: Dispatcher.ResponseData, where: string): Promise<string> {
    const max = this.opts.maxResponseBytes;
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) {
      res.body.destroy();
      throw new ApiResponseError(`${where}: response of ${declared} bytes exceeds max_response_mb`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > max) {
          res.body.destroy();
          throw new ApiResponseError(`${where}: response exceeds max_response_mb (${Math.round(max / 1048576)} MiB)`);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (err) {
      if (err instanceof ApiResponseError) throw err;
      throw new ApiUnreachableError(`${where}: connection lost while reading the response: ${describeNetworkError(err)}`, { cause: err });
    }
    const buf = Buffer.concat(chunks, size);
    // Feed pages are ASCII; for ASCII, latin1 decoding gives the same string several times faster.
    return isAscii(buf) ? buf.toString('latin1') : buf.toString('utf8');
  }
}

function serverMessage(text: string): string | undefined {
  try {
    const j = JSON.parse(text) as { message?: unknown };
    if (typeof j.message === 'string') return j.message.slice(0, 200);
  } catch {
    /* not JSON: no message to show */
  }
  return undefined;
}

function describeNetworkError(err: unknown): string {
  const code = errorCodeOf(err);
  const msg = err instanceof Error ? err.message : String(err);
  return code && !msg.includes(code) ? `${code}: ${msg}` : msg;
}
