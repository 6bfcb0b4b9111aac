import type { Agent as HttpAgent, IncomingMessage, ProxyEnv } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { SecureContext, TLSSocket } from 'node:tls';
import { isIP } from 'node:net';
import { markPhase, TransportTimeoutError, TUNNEL_SIGNAL, type PhaseInfo, type TransportOptions, type TransportRequest, type TransportResponse } from './transport-types.js';

export { TransportTimeoutError, type TransportOptions, type TransportRequest, type TransportResponse };

// Taken as CommonJS exports, not with an ES `import`: an ES import of node:http reads every
// export to build the module namespace, and three of them (WebSocket, CloseEvent, MessageEvent)
// are getters that load Node's bundled undici and web streams, about 10 MB resident that the
// agent never uses (docs/performance.md). getBuiltinModule reads nothing it is not asked for.
// node:https (and with it node:tls and OpenSSL's context, ~6 MB resident) is taken on the first
// https request only: an agent whose API URL and proxy are plain http never pays for it.
const http = process.getBuiltinModule('node:http');

/**
 * What the agent trusts for TLS: `ca_file` added to Node's default roots (Mozilla's list bundled
 * with Node, plus NODE_EXTRA_CA_CERTS), as "extra CA" says; Node's `ca` option alone would
 * replace them. One context for all connections: given as `ca`, the ~270 certificates would be
 * parsed again for every new connection (80-200 ms of CPU each).
 */
function trustedContext(ca: string): SecureContext {
  const tls = process.getBuiltinModule('node:tls');
  return tls.createSecureContext({ ca: [...tls.getCACertificates('default'), ca] });
}

const PROXY_VARIABLES = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'] as const;

/**
 * What the agents read their proxy from: config `proxy` for both protocols (and no NO_PROXY, as
 * a configured proxy carries every call), else the environment when it names a proxy.
 */
export function proxyEnvFor(proxy: string | undefined, env: NodeJS.ProcessEnv): ProxyEnv | undefined {
  if (proxy) return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy };
  if (PROXY_VARIABLES.some((k) => env[k])) return { ...env };
  return undefined;
}

/** `192.0.2.7:443`, `[2001:db8::7]:443`. */
const hostPort = (address: string, port: number) => (address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`);

/** node:https and the transport's Agent for it, made together on the first https request. */
type SecureClient = {
  https: typeof import('node:https');
  agent: HttpsAgent;
  /** The proxy's host:port for calls to host:port when they go through a tunnel. */
  via?: (host: string, port: number) => string | undefined;
};

/**
 * The HTTP transport under the API client: Node's own `http`/`https` with one keep-alive Agent
 * per protocol. It replaced undici, whose WASM parser, HTTP/2 and fetch code cost the daemon
 * about 13 MB resident (docs/performance.md). What undici gave and Node's client does not is
 * here: a connect timeout, an idle timeout while waiting for the headers and between body chunks,
 * and the proxy: plain http calls through Node's built-in proxy support (`proxyEnv`: the proxy
 * gets the request itself, on a socket the request owns from the start, so every limit reaches
 * it); https calls through the agent's own CONNECT tunnel (src/api/tunnel-agent.ts), which the
 * request's signal and connect timeout bound at every phase, as Node's built-in tunnel is not.
 */
export class HttpTransport {
  private readonly proxyEnv: ProxyEnv | undefined;
  private readonly http: HttpAgent;
  private secure: SecureClient | undefined;

  constructor(private readonly o: TransportOptions) {
    this.proxyEnv = proxyEnvFor(o.proxy, o.env ?? process.env);
    this.http = new http.Agent({ keepAlive: true, ...(this.proxyEnv ? { proxyEnv: this.proxyEnv } : {}) });
  }

  private async secureClient(): Promise<SecureClient> {
    if (this.secure) return this.secure;
    const https = process.getBuiltinModule('node:https');
    // TLS verification stays on; a custom CA is added, never a bypass. rejectUnauthorized
    // explicitly, so NODE_TLS_REJECT_UNAUTHORIZED=0 in an environment cannot turn checks off.
    const tlsOptions = { rejectUnauthorized: true, ...(this.o.ca ? { secureContext: trustedContext(this.o.ca) } : {}) };
    // The tunnel's code is loaded only when a proxy may carry https calls.
    const tunnel = this.proxyEnv ? (await import('./tunnel-agent.js')).tunnelAgentFor(this.o, tlsOptions) : undefined;
    const client: SecureClient = tunnel
      ? { https, agent: tunnel, via: (host, port) => tunnel.via(host, port) }
      : { https, agent: new https.Agent({ keepAlive: true, ...tlsOptions }) };
    // Two first requests at once: both get the Agent made first.
    return (this.secure ??= client);
  }

  async request(url: URL, r: TransportRequest): Promise<TransportResponse> {
    const tls = url.protocol === 'https:' ? await this.secureClient() : undefined;
    const headers = r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(typeof r.body === 'string' ? Buffer.byteLength(r.body) : r.body.byteLength) };
    return new Promise((resolve, reject) => {
      // Ends a proxy tunnel still being opened (no socket yet for req.destroy to reach): the
      // request's own signal, or the connect timeout below.
      const connectLimit = new AbortController();
      const tunnelled = tls?.via ? { [TUNNEL_SIGNAL]: AbortSignal.any([r.signal, connectLimit.signal]) } : {};
      const options = { method: r.method, headers, signal: r.signal, ...tunnelled };
      const req = tls ? tls.https.request(url, { ...options, agent: tls.agent }) : http.request(url, { ...options, agent: this.http });
      let response: IncomingMessage | undefined;
      // How far the request got, for the error: a user should read whether DNS, TCP, TLS or HTTP failed, and where.
      const port = Number(url.port || (tls ? 443 : 80));
      const host = url.hostname.replace(/^\[|\]$/g, '');
      // Through a proxy, the API's name is the proxy's to resolve: the phases are the proxy's connection, then HTTP.
      const via = tls ? tls.via?.(url.hostname, port) : this.o.proxy ? new URL(this.o.proxy).host : undefined;
      let at: PhaseInfo = { phase: via || isIP(host) ? 'TCP connect' : 'DNS', address: via || isIP(host) ? hostPort(host, port) : host, via };
      // Connect timeout: from the request until its socket (new, or through the proxy) is connected,
      // and for https until the TLS handshake is done (a server that accepts and never answers it).
      const connectTimer = setTimeout(() => {
        const proxy = tls?.via?.(url.hostname, Number(url.port || 443));
        const err = new TransportTimeoutError('CONNECT_TIMEOUT', `Connect Timeout Error (attempted address: ${url.host}${proxy ? ` through the proxy ${proxy}` : ''}, timeout: ${this.o.connectTimeoutMs}ms)`);
        connectLimit.abort(err);
        req.destroy(err);
      }, this.o.connectTimeoutMs);
      const connected = () => clearTimeout(connectTimer);
      req.once('socket', (socket: Socket) => {
        const remote = () => (!via && socket.remoteAddress ? hostPort(socket.remoteAddress, socket.remotePort ?? port) : at.address);
        const handshaking = (socket as Partial<TLSSocket>).encrypted === true && !(socket as TLSSocket).authorized;
        if (!socket.connecting) at = { ...at, phase: handshaking ? 'TLS' : 'HTTP', address: remote() };
        // A new socket only (a reused one is past these steps): its steps move the phase on; removed when the request ends.
        const lookup = (err: Error | null, address: string) => {
          if (!err && !via) at = { ...at, phase: 'TCP connect', address: hostPort(address, port) };
        };
        const tcp = () => (at = { ...at, phase: tls && !via ? 'TLS' : 'HTTP', address: remote() });
        const secured = () => (at = { ...at, phase: 'HTTP' });
        if (socket.connecting) {
          socket.once('lookup', lookup);
          socket.once('connect', tcp);
        }
        if (handshaking || socket.connecting) socket.once('secureConnect', secured);
        req.once('close', () => {
          socket.off('lookup', lookup);
          socket.off('connect', tcp);
          socket.off('secureConnect', secured);
        });
        // A reused TLS socket has passed its handshake and verification (`authorized`); a new one has not yet.
        // (`encrypted` is true on a TLSSocket only; node:tls is not imported to ask instanceof.)
        if ((socket as Partial<TLSSocket>).encrypted === true) {
          if ((socket as TLSSocket).authorized) connected();
          else socket.once('secureConnect', connected);
        } else if (!socket.connecting) connected();
        else socket.once('connect', connected);
      });
      req.once('close', connected);
      // Idle limit once connected: for the headers first, then between body chunks.
      req.setTimeout(this.o.idleTimeoutMs, () => {
        const ms = this.o.idleTimeoutMs;
        if (response) response.destroy(new TransportTimeoutError('BODY_TIMEOUT', `Body Timeout Error (no data for ${ms} ms)`));
        else req.destroy(new TransportTimeoutError('HEADERS_TIMEOUT', `Headers Timeout Error (no answer within ${ms} ms)`));
      });
      req.once('error', (err) => {
        markPhase(err, at);
        reject(err);
      });
      req.once('response', (res) => {
        connected();
        response = res;
        resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: res });
      });
      req.end(r.body);
    });
  }

  /** Closes every connection, idle or in use. */
  close(): void {
    this.http.destroy();
    this.secure?.agent.destroy();
  }
}
