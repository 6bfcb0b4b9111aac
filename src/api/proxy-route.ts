/**
 * Which proxy an https call goes through, decided as Node's own proxy support (`proxyEnv`)
 * decides it for plain http, so both protocols follow the same settings: config `proxy` for
 * every call (no NO_PROXY then, as a configured proxy carries everything); else `https_proxy`
 * or `HTTPS_PROXY` (lower case first) when it is an http:// or https:// URL, minus the hosts
 * NO_PROXY / no_proxy exempts (curl's rules: `*`, a host, host:port, `.suffix`, `*.suffix`,
 * an IPv4 range `a.b.c.d-e.f.g.h`).
 */
import { isIPv4, isIPv6 } from 'node:net';

export interface ProxyServer {
  protocol: 'http:' | 'https:';
  /** Host name or address, without IPv6 brackets (what net.connect takes). */
  host: string;
  port: number;
  /** host:port as people write it, for messages (no credentials). */
  authority: string;
  /** `Basic ...` from credentials in the URL, sent on each CONNECT. */
  authorization?: string;
}

export function parseProxyUrl(url: string): ProxyServer | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!host) return undefined;
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  const server: ProxyServer = { protocol: u.protocol, host, port, authority: `${u.hostname}:${port}` };
  if (u.username || u.password) {
    server.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  }
  return server;
}

export class ProxyRoute {
  private readonly server: ProxyServer | undefined;
  private readonly bypass: string[];

  constructor(configProxy: string | undefined, env: NodeJS.ProcessEnv) {
    if (configProxy) {
      this.server = parseProxyUrl(configProxy);
      this.bypass = [];
      return;
    }
    const fromEnv = env.https_proxy || env.HTTPS_PROXY;
    this.server = fromEnv && /^https?:\/\//.test(fromEnv) ? parseProxyUrl(fromEnv) : undefined;
    const noProxy = env.no_proxy || env.NO_PROXY;
    this.bypass = noProxy ? noProxy.split(',').map((e) => e.trim().toLowerCase()).filter(Boolean) : [];
  }

  /** True when some https call may go through a proxy. */
  get configured(): boolean {
    return this.server !== undefined;
  }

  /** The proxy for a call to host:port, or undefined to connect directly. */
  for(hostname: string, port: number): ProxyServer | undefined {
    if (!this.server) return undefined;
    const host = hostname.toLowerCase().replace(/^\[|\]$/g, '');
    const hostPort = `${isIPv6(host) ? `[${host}]` : host}:${port}`;
    for (const entry of this.bypass) {
      if (entry === '*' || entry === host || entry === hostPort) return undefined;
      if (entry.startsWith('.') && (host === entry.slice(1) || host.endsWith(entry))) return undefined;
      if (entry.startsWith('*.') && host.endsWith(entry.slice(1))) return undefined;
      if (entry.includes('-') && isIPv4(host) && inRange(host, entry)) return undefined;
    }
    return this.server;
  }
}

function inRange(ip: string, range: string): boolean {
  const [from, to] = range.split('-').map((s) => s.trim());
  if (!from || !to || !isIPv4(from) || !isIPv4(to)) return false;
  const n = (a: string) => a.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  return n(ip) >= n(from) && n(ip) <= n(to);
}
