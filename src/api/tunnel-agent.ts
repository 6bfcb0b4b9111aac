/**
 * The https Agent used when a proxy is configured (config `proxy`, or HTTPS_PROXY): Node's own
 * Agent (keep-alive pool, TLS verification) whose new connections to a proxied host are opened
 * through src/api/proxy-tunnel.ts instead of Node's built-in tunnel. Loaded only then: a host
 * without a proxy never loads this file.
 */
import type { RequestOptions } from 'node:http';
import type { AgentOptions } from 'node:https';
import type { Duplex } from 'node:stream';
import { TUNNEL_SIGNAL, type TransportOptions } from './transport-types.js';
import { openTunnel } from './proxy-tunnel.js';
import { ProxyRoute } from './proxy-route.js';

const https = process.getBuiltinModule('node:https');
const tls = process.getBuiltinModule('node:tls');

type Callback = (err: Error | null, stream: Duplex) => void;
type TlsOptions = Pick<AgentOptions, 'secureContext' | 'rejectUnauthorized'>;

/** The Agent for https calls when config `proxy` or HTTPS_PROXY names a proxy; else undefined. */
export function tunnelAgentFor(o: Pick<TransportOptions, 'proxy' | 'env' | 'connectTimeoutMs'>, tlsOptions: TlsOptions): TunnelAgent | undefined {
  const route = new ProxyRoute(o.proxy, o.env ?? process.env);
  return route.configured ? new TunnelAgent(route, o.connectTimeoutMs, tlsOptions, { keepAlive: true }) : undefined;
}

export class TunnelAgent extends https.Agent {
  /** Ends the tunnels still being opened when the Agent is destroyed (they are not its sockets yet). */
  private readonly closing = new AbortController();

  constructor(
    private readonly route: ProxyRoute,
    /** Bounds a tunnel opened without a request signal (never the case from src/api/http.ts). */
    private readonly connectTimeoutMs: number,
    private readonly tlsOptions: TlsOptions,
    options: AgentOptions,
  ) {
    super({ ...options, ...tlsOptions });
  }

  /** The proxy's host:port for calls to host:port, if they go through one. */
  via(host: string, port: number): string | undefined {
    return this.route.for(host, port)?.authority;
  }

  override createConnection(options: RequestOptions, callback?: Callback): Duplex | null | undefined {
    const host = options.host ?? 'localhost';
    const port = Number(options.port ?? 443);
    const proxy = this.route.for(host, port);
    if (!proxy) return super.createConnection(options, callback);
    const own = (options as { [TUNNEL_SIGNAL]?: AbortSignal })[TUNNEL_SIGNAL] ?? AbortSignal.timeout(this.connectTimeoutMs);
    const signal = AbortSignal.any([own, this.closing.signal]);
    openTunnel({ proxy, host, port, signal, secureContext: this.tlsOptions.secureContext }).then(
      (raw) => {
        // TLS with the API over the tunnel, verified as a direct connection is (servername and
        // the trusted CAs come in `options` from the Agent). The request's connect timeout still runs
        // until the handshake is done.
        const secure = tls.connect({ ...(options as object), socket: raw });
        secure.once('close', () => raw.destroy());
        callback?.(null, secure);
      },
      // No socket with an error: the Agent hands the error to the request.
      (err: Error) => callback?.(err, undefined as unknown as Duplex),
    );
    return undefined;
  }

  override destroy(): void {
    this.closing.abort(new Error('the API client was closed'));
    super.destroy();
  }
}
