import type { Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage, ProxyEnv } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

// Taken as CommonJS exports, not with an ES `import`: an ES import of node:http reads every
// export to build the module namespace, and three of them (WebSocket, CloseEvent, MessageEvent)
// are getters that load Node's bundled undici and web streams, about 10 MB resident that the
// agent never uses (docs/performance.md). getBuiltinModule reads nothing it is not asked for.
// node:https (and with it node:tls and OpenSSL's context, ~6 MB resident) is taken on the first
// https request only: an agent whose API URL and proxy are plain http never pays for it.
const http = process.getBuiltinModule('node:http');

/**
 * The HTTP transport under the API client: Node's own `http`/`https` with one keep-alive Agent
 * per protocol. It replaced undici, whose WASM parser, HTTP/2 and fetch code cost the daemon
 * about 13 MB resident (docs/performance.md). What undici gave and Node's client does not is
 * here: a connect timeout, an idle timeout while waiting for the headers and between body chunks,
 * and the proxy (Node's built-in proxy support, `proxyEnv`: HTTP_PROXY, HTTPS_PROXY, NO_PROXY).
 */
export interface TransportOptions {
  connectTimeoutMs: number;
  /** Idle limit: no byte for this long while waiting for the headers or between body chunks. */
  idleTimeoutMs: number;
  /** PEM of the CA bundle to trust instead of Node's default list. */
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

/** node:https and the transport's Agent for it, made together on the first https request. */
type SecureClient = { https: typeof import('node:https'); agent: HttpsAgent };

export class HttpTransport {
  private readonly proxyEnv: ProxyEnv | undefined;
  private readonly http: HttpAgent;
  private secure: SecureClient | undefined;

  constructor(private readonly o: TransportOptions) {
    this.proxyEnv = proxyEnvFor(o.proxy, o.env ?? process.env);
    this.http = new http.Agent({ keepAlive: true, ...(this.proxyEnv ? { proxyEnv: this.proxyEnv } : {}) });
  }

  private secureClient(): SecureClient {
    if (this.secure) return this.secure;
    const https = process.getBuiltinModule('node:https');
    // TLS verification stays on; a custom CA is added, never a bypass. rejectUnauthorized
    // explicitly, so NODE_TLS_REJECT_UNAUTHORIZED=0 in an environment cannot turn checks off.
    const agent = new https.Agent({ keepAlive: true, rejectUnauthorized: true, ...(this.o.ca ? { ca: this.o.ca } : {}), ...(this.proxyEnv ? { proxyEnv: this.proxyEnv } : {}) });
    this.secure = { https, agent };
    return this.secure;
  }

  request(url: URL, r: TransportRequest): Promise<TransportResponse> {
    const secure = url.protocol === 'https:';
    const headers = r.body === undefined ? r.headers : { ...r.headers, 'content-length': String(typeof r.body === 'string' ? Buffer.byteLength(r.body) : r.body.byteLength) };
    return new Promise((resolve, reject) => {
      const options = { method: r.method, headers, signal: r.signal };
      const tls = secure ? this.secureClient() : undefined;
      const req = tls ? tls.https.request(url, { ...options, agent: tls.agent }) : http.request(url, { ...options, agent: this.http });
      let response: IncomingMessage | undefined;
      // Connect timeout: from the request until its socket (new, or through the proxy) is connected,
      // and for https until the TLS handshake is done (a server that accepts and never answers it).
      const connectTimer = setTimeout(() => {
        req.destroy(new TransportTimeoutError('CONNECT_TIMEOUT', `Connect Timeout Error (attempted address: ${url.host}, timeout: ${this.o.connectTimeoutMs}ms)`));
      }, this.o.connectTimeoutMs);
      const connected = () => clearTimeout(connectTimer);
      req.once('socket', (socket: Socket) => {
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
      req.once('error', reject);
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
