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
