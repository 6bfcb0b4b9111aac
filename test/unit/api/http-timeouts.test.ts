// The HTTP transport's own limits, against servers on loopback that stall on purpose: the idle
// limit while waiting for the headers and between body chunks, and a connect timeout that ends
// with the connection and, for https, the TLS handshake (a slow answer, direct or through a proxy
// tunnel, is not cut by it).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, type ClientOptions } from '../../../src/api/client.js';
import { ThreatIntelApi } from '../../../src/api/threat-intel.js';

let tmp: string;
const open: { server: Server; sockets: Set<Socket> }[] = [];
const clients: ApiClient[] = [];

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'wcf-http-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  for (const { server, sockets } of open.splice(0)) {
    for (const s of sockets) s.destroy();
    server.close();
  }
});

async function listen(server: Server): Promise<number> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
  open.push({ server, sockets });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

function api(baseUrl: string, over: Partial<ClientOptions> = {}): ThreatIntelApi {
  const client = new ApiClient({
    baseUrl,
    token: 't',
    authScheme: 'bearer',
    connectTimeoutMs: 2000,
    requestTimeoutMs: 400,
    requestDeadlineMs: 30_000,
    retries: 0,
    maxResponseBytes: 1024 * 1024,
    userAgent: 'wcf-agent-test',
    logger: pino({ level: 'silent' }),
    ...over,
  });
  clients.push(client);
  return new ThreatIntelApi(client);
}

const PAGE = JSON.stringify({ header: { type: 'ips' }, body: [{ ip: '192.0.2.1', ts: 1, score: 5 }] });

/** An API answering every request with one feed page after `delayMs`. */
const slowApi = (delayMs: number) =>
  createHttpServer((_req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(PAGE), delayMs));

describe('idle limits (request_timeout_ms)', () => {
  it('a server that accepts and never answers: the call fails as unreachable, naming the headers wait', async () => {
    const port = await listen(createNetServer(() => undefined));
    const err = await api(`http://127.0.0.1:${port}`).feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect((err as Error).message).toMatch(/HEADERS_TIMEOUT: Headers Timeout Error \(no answer within 400 ms\)/);
  });

  it('a body that stops half-way: the call fails as unreachable, naming the body wait', async () => {
    const port = await listen(
      createNetServer((s) => s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"header":{},"body":[')),
    );
    const err = await api(`http://127.0.0.1:${port}`).feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect((err as Error).message).toMatch(/connection lost while reading the response: BODY_TIMEOUT: Body Timeout Error \(no data for 400 ms\)/);
  });

  it('a slow answer within the idle limit comes through', async () => {
    // Wide margins on both sides (two busy cores): an answer after 1 s, an idle limit of 4 s.
    const port = await listen(slowApi(1000));
    expect((await api(`http://127.0.0.1:${port}`, { requestTimeoutMs: 4000 }).feedPage(0, 0, 10)).body).toHaveLength(1);
  });
});

/**
 * Wide margins (two busy cores): a connect (and a TLS handshake through the proxy) has 1.5 s,
 * far more than it takes on loopback, and the answer comes 2.5 s after that limit would end.
 */
const CONNECT_MS = 1500;
const ANSWER_MS = 4000;

describe('the connect timeout ends with the connection', () => {
  it('an answer slower than connect_timeout_ms, direct: comes through', async () => {
    const port = await listen(slowApi(ANSWER_MS));
    expect((await api(`http://127.0.0.1:${port}`, { connectTimeoutMs: CONNECT_MS, requestTimeoutMs: 10_000 }).feedPage(0, 0, 10)).body).toHaveLength(1);
  });

  it('https to a server that accepts the connection and never answers the TLS handshake: connect_timeout_ms ends it', async () => {
    const port = await listen(createNetServer(() => undefined));
    const err = await api(`https://127.0.0.1:${port}`, { connectTimeoutMs: 300, requestTimeoutMs: 20_000 }).feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect((err as Error).message).toMatch(/CONNECT_TIMEOUT: Connect Timeout Error \(attempted address: 127\.0\.0\.1:\d+, timeout: 300ms\)/);
  });

  it('answers slower than connect_timeout_ms, https through a proxy tunnel: come through, on one tunnel', { timeout: 60_000 }, async () => {
    const keyFile = join(tmp, 'k.pem');
    const certFile = join(tmp, 'c.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
    const tlsPort = await listen(
      createHttpsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (_req, res) =>
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(PAGE), ANSWER_MS),
      ),
    );
    const tunnels: string[] = [];
    const proxy = createHttpServer();
    proxy.on('connect', (req, client: Socket) => {
      tunnels.push(req.url!);
      const up = netConnect(tlsPort, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        up.pipe(client).pipe(up);
      });
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
    const proxyPort = await listen(proxy);
    const a = api(`https://localhost:${tlsPort}`, { connectTimeoutMs: CONNECT_MS, requestTimeoutMs: 10_000, caFile: certFile, proxy: `http://127.0.0.1:${proxyPort}` });
    expect((await a.feedPage(0, 0, 10)).body).toHaveLength(1);
    // The second call reuses the tunnel's TLS connection: not cut by the connect timeout either.
    expect((await a.feedPage(0, 0, 10)).body).toHaveLength(1);
    expect(tunnels).toEqual([`localhost:${tlsPort}`]);
  });
});
