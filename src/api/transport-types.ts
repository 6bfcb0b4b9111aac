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

/**
 * How far a request got when it failed: resolving the host name, opening the TCP connection, the
 * TLS handshake, or the HTTP exchange over an open connection. With the address tried (`ip:port`
 * once the name is resolved, else the host name), and the proxy when one carried the call.
 */
export type TransportPhase = 'DNS' | 'TCP connect' | 'TLS' | 'HTTP';
export interface PhaseInfo {
  readonly phase: TransportPhase;
  readonly address: string;
  readonly via?: string | undefined;
}

const PHASE = Symbol('wcf-agent transport phase');

/** Remembers on the error where the request failed (the first mark wins: the error may pass through twice). */
export function markPhase(err: unknown, info: PhaseInfo): void {
  if (err !== null && typeof err === 'object' && !(PHASE in err)) Object.defineProperty(err, PHASE, { value: info, enumerable: false });
}

/** Where the request failed, if the transport said; read along the cause chain. */
export function phaseOf(err: unknown): PhaseInfo | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e !== null && typeof e === 'object'; i++) {
    if (PHASE in e) return (e as { [PHASE]: PhaseInfo })[PHASE];
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `DNS lookup of api.example.net`, `TCP connect to 192.0.2.7:443 (through the proxy proxy:3128)`: the words errors start with. */
export function phaseText(info: PhaseInfo): string {
  const what =
    info.phase === 'DNS'
      ? `DNS lookup of ${info.address}`
      : info.phase === 'TCP connect'
        ? `TCP connect to ${info.address}`
        : info.phase === 'TLS'
          ? `TLS handshake with ${info.address}`
          : `HTTP exchange with ${info.address}`;
  return info.via ? `${what} (through the proxy ${info.via})` : what;
}
