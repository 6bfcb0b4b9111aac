/**
 * The CONNECT tunnel through a forward proxy, for https calls, over node:net and node:tls.
 * Written here because neither Node's built-in tunnel (`proxyEnv`) nor undici's ProxyAgent
 * (8.12) is bounded by the caller: while Node's waits for the proxy's answer the request has
 * no socket, so no abort or timeout reaches it (a silent proxy held `sync` for good; a trickled
 * answer added a 'readable' listener per read until Node crashed; a 407 left the socket open);
 * undici's ProxyAgent ignored the request's abort signal and headersTimeout while a proxy said
 * nothing to its CONNECT, and costs ~10 MB resident besides. Here every phase ends on the
 * caller's signal (connect timeout, request and cycle deadlines, the agent stopping), the answer
 * is read with one listener and a byte cap, and every failure closes the socket.
 */
import type { Socket } from 'node:net';
import type { SecureContext, TLSSocket } from 'node:tls';
import { escapeControls } from '../util/terminal-text.js';
import { TransportTimeoutError } from './transport-types.js';
import type { ProxyServer } from './proxy-route.js';

const net = process.getBuiltinModule('node:net');
const tls = process.getBuiltinModule('node:tls');

/** A proxy answer to CONNECT longer than this (its status line and headers) is refused. */
export const MAX_CONNECT_ANSWER_BYTES = 16_384;

/** The proxy refused the tunnel, broke the exchange or answered something that is not HTTP. */
export class ProxyTunnelError extends Error {
  readonly code = 'ERR_PROXY_TUNNEL';
  constructor(
    message: string,
    /** The proxy's status code, when it answered one. */
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProxyTunnelError';
  }
}

export interface TunnelOptions {
  proxy: ProxyServer;
  /** The API's host and port, as the CONNECT request names them. */
  host: string;
  port: number;
  /** Ends the attempt at any phase (a CONNECT_TIMEOUT reason stays the error, with the phase added). */
  signal: AbortSignal;
  /** Trust for an https proxy's own certificate: the API's (`ca_file` added), else Node's default. */
  secureContext?: SecureContext | undefined;
}

/** Opens a raw byte stream to host:port through the proxy; the caller runs TLS over it. */
export function openTunnel(o: TunnelOptions): Promise<Socket> {
  const { proxy } = o;
  const target = `${net.isIPv6(o.host) ? `[${o.host}]` : o.host}:${o.port}`;
  if (/[\s]/.test(target)) return Promise.reject(new ProxyTunnelError(`invalid tunnel target ${JSON.stringify(target)}`));
  return new Promise<Socket>((resolve, reject) => {
    let phase = `connecting to the proxy ${proxy.authority}`;
    let socket: Socket | TLSSocket;
    // The answer so far, in one buffer of the cap's size (taken on the first byte): no copy per chunk.
    let answer: Buffer | undefined;
    let received = 0;

    const done = (err: Error | undefined) => {
      o.signal.removeEventListener('abort', onAbort);
      socket.off('data', onData).off('error', onError).off('end', onEnd).off('close', onEnd);
      if (err) {
        socket.destroy();
        return reject(err);
      }
      socket.pause();
      // Until the caller has wrapped it in TLS (which reports the socket's errors from then on).
      socket.on('error', () => undefined);
      resolve(socket);
    };
    const onAbort = () => {
      const why = o.signal.reason as unknown;
      if (why instanceof TransportTimeoutError) done(new TransportTimeoutError(why.code, `${why.message}: ${phase}`));
      // The request's or the cycle's deadline, or the agent stopping: the caller names the reason; the phase says where.
      else done(new ProxyTunnelError(phase, undefined, { cause: why }));
    };
    const onError = (err: Error) => done(new ProxyTunnelError(`${phase}: ${err.message}`, undefined, { cause: err }));
    const onEnd = () => done(new ProxyTunnelError(`the proxy ${proxy.authority} closed the connection before answering CONNECT`));
    const onData = (chunk: Buffer) => {
      answer ??= Buffer.allocUnsafe(MAX_CONNECT_ANSWER_BYTES + 1);
      const from = Math.max(0, received - 3);
      received += chunk.copy(answer, received);
      const bytes = answer.subarray(0, received);
      const end = bytes.indexOf('\r\n\r\n', from);
      if (end !== -1) return done(checkAnswer(bytes, end, proxy, target));
      if (received > MAX_CONNECT_ANSWER_BYTES) return done(new ProxyTunnelError(`the proxy ${proxy.authority}'s answer to CONNECT is longer than ${MAX_CONNECT_ANSWER_BYTES} bytes`));
      phase = `the proxy ${proxy.authority} has sent ${received} bytes of its answer to CONNECT ${target}, not its end`;
    };

    if (o.signal.aborted) return reject(o.signal.reason as Error);
    o.signal.addEventListener('abort', onAbort, { once: true });
    const request = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : ''}\r\n`;
    const onConnected = () => {
      phase = `the proxy ${proxy.authority} accepted the connection and has not answered CONNECT ${target}`;
      socket.write(request);
      // One 'data' listener for the whole answer (Node's tunnel added a 'readable' listener per read).
      socket.on('data', onData);
    };
    socket =
      proxy.protocol === 'https:'
        ? tls.connect({ host: proxy.host, port: proxy.port, servername: net.isIP(proxy.host) ? undefined : proxy.host, secureContext: o.secureContext, rejectUnauthorized: true }, onConnected)
        : net.connect({ host: proxy.host, port: proxy.port }, onConnected);
    socket.on('error', onError).on('end', onEnd).on('close', onEnd);
  });
}

/** undefined for a 2xx answer with nothing after its headers; else why the tunnel is refused. */
function checkAnswer(bytes: Buffer, headerEnd: number, proxy: ProxyServer, target: string): Error | undefined {
  const head = bytes.subarray(0, headerEnd).toString('latin1');
  const statusLine = head.slice(0, head.indexOf('\r\n') === -1 ? undefined : head.indexOf('\r\n'));
  const shown = escapeControls(statusLine.slice(0, 200));
  const m = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(statusLine);
  if (!m) return new ProxyTunnelError(`the proxy ${proxy.authority} answered CONNECT with something that is not HTTP/1.x: ${shown}`);
  const status = Number(m[1]);
  // RFC 9110: any 2xx opens the tunnel. A 1xx interim answer is refused too: proxies do not send
  // one to CONNECT, and waiting on for a final answer would only delay the error.
  if (status < 200 || status > 299) {
    const hint = status === 407 ? ' (put the credentials in the proxy URL: http://user:password@host:port)' : '';
    return new ProxyTunnelError(`the proxy ${proxy.authority} answered CONNECT with ${shown}, refusing the tunnel to ${target}${hint}`, status);
  }
  // The API speaks only after our TLS ClientHello: bytes here are not the API's.
  if (bytes.length > headerEnd + 4) return new ProxyTunnelError(`the proxy ${proxy.authority} sent ${bytes.length - headerEnd - 4} bytes after its answer to CONNECT, before the TLS handshake`);
  return undefined;
}
