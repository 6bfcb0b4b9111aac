import { isIPv4, isIPv6 } from 'node:net';
import { ConfigError } from '../errors.js';

/** Where the Prometheus endpoint listens, from config `metrics_listen`. */
export interface ListenAddress {
  host: string;
  port: number;
  /** The host is a loopback address (127.0.0.0/8, ::1, localhost). */
  loopback: boolean;
  /** The operator named the host; a bare port means 127.0.0.1. */
  explicitHost: boolean;
}

export const DEFAULT_METRICS_HOST = '127.0.0.1';

export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIPv4(host)) return host.startsWith('127.');
  return isIPv6(host) && (host === '::1' || /^(?:0{1,4}:){7}0{0,3}1$/.test(host));
}

const problem = (value: string, why: string) =>
  new ConfigError('metrics_listen is not valid', [
    `metrics_listen: ${JSON.stringify(value)} ${why}; use PORT, HOST:PORT or [IPv6]:PORT, e.g. "127.0.0.1:9464"`,
  ]);

/**
 * `9464` / `:9464` (loopback), `127.0.0.1:9464`, `0.0.0.0:9464`, `[::1]:9464`.
 * Hosts are IP literals or `localhost` (no name lookups at start-up). Port 0
 * asks the kernel for a free port; the bound one is logged.
 */
export function parseListen(value: string): ListenAddress {
  const v = value.trim();
  let host: string;
  let portText: string;
  const bracket = /^\[([^\]]+)\]:(\d+)$/.exec(v);
  if (bracket) {
    host = bracket[1]!;
    portText = bracket[2]!;
  } else if (/^\d+$/.test(v)) {
    host = '';
    portText = v;
  } else {
    const colon = v.lastIndexOf(':');
    if (colon === -1) throw problem(value, 'has no port');
    host = v.slice(0, colon);
    portText = v.slice(colon + 1);
    if (host.includes(':')) throw problem(value, 'is an IPv6 address without brackets');
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw problem(value, 'has a bad port (0..65535)');
  const explicitHost = host !== '';
  if (!explicitHost) host = DEFAULT_METRICS_HOST;
  if (host !== 'localhost' && !isIPv4(host) && !isIPv6(host)) throw problem(value, 'has a host that is not an IP address or localhost');
  return { host, port: Number(portText), loopback: isLoopbackHost(host), explicitHost };
}

/**
 * The listener's own bounds. It is reachable by every local user (and, in the DaemonSet, by
 * every hostNetwork pod), so what a connection may cost is the agent's decision, not the
 * Node version's: each open connection costs the agent about 8 KB, and without a cap 12,000
 * silent ones added 100 MB. Prometheus keeps one connection per target and the kubelet opens
 * one per probe, so 64 is many times what honest clients hold at once; past it a new
 * connection is closed as soon as it is accepted. Stated in docs/daemon.md (Metrics).
 */
export interface ListenerLimits {
  /** Open connections at most; one more is closed on accept. */
  readonly maxConnections: number;
  /** A request's headers must be complete this long after it began (or after the connection opened): silent and slow-header clients get 408 and are closed. */
  readonly headersTimeoutMs: number;
  /** A whole request must have arrived within this. */
  readonly requestTimeoutMs: number;
  /** An idle kept-alive connection is closed this long after its last answer. */
  readonly keepAliveTimeoutMs: number;
  /** A connection on which no byte moves either way for this long is destroyed (a client that stopped reading, or vanished). */
  readonly idleTimeoutMs: number;
  /** How often the header and request deadlines are checked (Node's default is 30 s, which let a silent connection live up to 35 s). */
  readonly checkEveryMs: number;
}

export const LISTENER_LIMITS: ListenerLimits = Object.freeze({
  maxConnections: 64,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 15_000,
  checkEveryMs: 1_000,
});
