/**
 * The transport's types, its timeout error and the tunnel's request option: a leaf that both
 * src/api/http.ts and the tunnel it loads on demand (src/api/tunnel-agent.ts) import.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';

/**
 * Symbol key of the request option that carries the abort signal to the tunnel Agent
 * (src/api/tunnel-agent.ts): Node keeps a request's `signal` to itself, and a tunnel still being
 * opened has no socket that destroying the request could reach.
 */
export const TUNNEL_SIGNAL = Symbol('wcf-agent tunnel signal');

/** What the transport is made with (src/api/http.ts). */
export interface TransportOptions {
  connectTimeoutMs: number;
  /** Idle limit: no byte for this long while waiting for the headers or between body chunks. */
  idleTimeoutMs: number;
  /** PEM of CA certificates trusted in addition to Node's default list (config `ca_file`). */
  ca?: string | undefined;
  /** Proxy for every call (config `proxy`); else the proxy environment variables, if any. */
  proxy?: string | undefined;
  env?: NodeJS.ProcessEnv;
}

export interface TransportRequest {
  method: string;
  headers: Record<string, string>;
  /** A string, or bytes sent as they are (a large body the caller wrote into one buffer). */
  body?: string | Uint8Array | undefined;
  signal: AbortSignal;
}

export interface TransportResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage;
}

/** A request or response stalled past one of the transport's limits; `code` says which. */
export class TransportTimeoutError extends Error {
  constructor(
    readonly code: 'CONNECT_TIMEOUT' | 'HEADERS_TIMEOUT' | 'BODY_TIMEOUT',
    message: string,
  ) {
    super(message);
    this.name = 'TransportTimeoutError';
  }
}
