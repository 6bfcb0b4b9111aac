// ApiClient against the real simulator over loopback: retries, no retry on 4xx, the size cap,
// TLS verification with and without ca_file, and proxies (config `proxy` and the environment).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient, ClientOptions } from '../../../src/api/client.js';
import { ThreatIntelApi } from '../../../src/api/threat-intel.js';
import { testApi } from '../../helpers/api-client.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';

let sim: Simulator;
let simPort: number;
let tmp: string;
const clients: ApiClient[] = [];
const servers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 3 });
  simPort = Number(new URL(sim.url).port);
  tmp = mkdtempSync(join(tmpdir(), 'wcf-client-'));
});
afterAll(async () => {
  await sim?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});
beforeEach(() => {
  sim.setFault(null);
  sim.clearRequests();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function api(over: Partial<ClientOptions> = {}): ThreatIntelApi {
  return testApi(clients, { baseUrl: sim.url, token: sim.token, ...over });
}

const feedRequests = () => sim.requests.filter((r) => r.path.endsWith('/ips'));

describe('retries', () => {
  it('a 500 is retried and the call then succeeds', async () => {
    sim.setFault('http500', { count: 1 });
    const page = await api().feedPage(0, 0, 10);
    expect(page.body).toHaveLength(10);
    expect(feedRequests().map((r) => r.status)).toEqual([500, 200]);
  });

  it('a 429 (rate limited) is retried and the call then succeeds', async () => {
    sim.setFault('http429', { count: 2 });
    const page = await api().feedPage(0, 0, 10);
    expect(page.body).toHaveLength(10);
    expect(feedRequests().map((r) => r.status)).toEqual([429, 429, 200]);
  });

  it('a reset connection is retried', async () => {
    sim.setFault('reset', { count: 1, routes: ['GET /ips'] });
    const page = await api().feedPage(0, 0, 10);
    expect(page.body).toHaveLength(10);
    expect(feedRequests()).toHaveLength(2);
  });

  it('retries are bounded: a persistent 500 fails after 1 + retries attempts', async () => {
    sim.setFault('http500');
    await expect(api({ retries: 2 }).feedPage(0, 0, 10)).rejects.toMatchObject({ code: 'WCF_ERR_API_STATUS', status: 500 });
    expect(feedRequests().map((r) => r.status)).toEqual([500, 500, 500]);
  });

  it('a wrong token (403) is one request, no retry, and the message points at the token', async () => {
    const err = await api({ token: 'wrong-token' }).feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_AUTH', status: 403 });
    expect((err as Error).message).toMatch(/token/);
    expect(feedRequests().map((r) => r.status)).toEqual([403]);
  });

  it('another 4xx (400, bad query) is not retried either', async () => {
    await expect(api().feedPage(0, 0, 5000)).rejects.toMatchObject({ code: 'WCF_ERR_API_STATUS', status: 400 });
    expect(feedRequests().map((r) => r.status)).toEqual([400]);
  });
});

describe('response size cap', () => {
  it('a response declared larger than the cap fails, naming max_response_mb, without retry', async () => {
    const err = await api({ maxResponseBytes: 8192 }).feedPage(0, 0, 1000).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_RESPONSE' });
    expect((err as Error).message).toMatch(/max_response_mb/);
    expect(feedRequests()).toHaveLength(1);
  });

  it('a streamed response (no length) that grows past the cap fails, naming max_response_mb', async () => {
    sim.setFault('oversized', { oversize: 'bytes', sizeBytes: 8 * 1024 * 1024 });
    const err = await api({ maxResponseBytes: 1024 * 1024 }).feedPage(0, 0, 1000).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_RESPONSE' });
    expect((err as Error).message).toMatch(/max_response_mb \(1 MiB\)/);
    expect(feedRequests()).toHaveLength(1);
  });
});

// ---- TLS -----------------------------------------------------------------------------------

/** A self-signed certificate for `names` (DNS names / IPs), made with the openssl CLI. */
async function selfSigned(name: string, san: string): Promise<{ cert: string; key: string; certFile: string }> {
  const certFile = join(tmp, `${name}.crt`);
  const keyFile = join(tmp, `${name}.key`);
  await execa('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', `/CN=${name}`, '-addext', `subjectAltName=${san}`,
  ]);
  return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), certFile };
}

function trackSockets(server: Server | TlsServer): () => void {
  const open = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  return () => {
    for (const s of open) s.destroy();
  };
}

/** TLS in front of the simulator: decrypts and pipes each connection to it. Answers the https base_url. */
async function tlsFront(cert: { cert: string; key: string }): Promise<{ port: number; url: (host: string) => string }> {
  const server = createTlsServer({ cert: cert.cert, key: cert.key }, (tls) => {
    const up = netConnect(simPort, '127.0.0.1');
    tls.pipe(up).pipe(tls);
    tls.on('error', () => up.destroy());
    up.on('error', () => tls.destroy());
  });
  server.on('tlsClientError', () => undefined);
  const kill = trackSockets(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push({ close: () => new Promise((r) => (kill(), server.close(() => r()))) });
  const port = (server.address() as AddressInfo).port;
  return { port, url: (host) => `https://${host}:${port}/api/v1` };
}

describe('TLS', () => {
  let good: Awaited<ReturnType<typeof selfSigned>>;
  let other: Awaited<ReturnType<typeof selfSigned>>;
  beforeAll(async () => {
    good = await selfSigned('localhost', 'DNS:localhost,IP:127.0.0.1');
    other = await selfSigned('other.example', 'DNS:other.example');
  });

  it('a self-signed server is refused without ca_file, and nothing reaches the API', async () => {
    const front = await tlsFront(good);
    const err = await api({ baseUrl: front.url('localhost'), retries: 0 }).feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect((err as Error).message).toMatch(/self[- ]signed/i);
    expect(feedRequests()).toHaveLength(0);
  });

  it('an untrusted certificate fails at once, not retried, with a hint naming ca_file', async () => {
    const front = await tlsFront(good);
    const t = api({ baseUrl: front.url('localhost'), retries: 3, retryMinDelayMs: 10 });
    const attempts: unknown[] = [];
    t.client.onRequest = (info) => attempts.push(info);
    const err = await t.feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect((err as Error).message).toMatch(/not trusted: set ca_file/);
    expect(attempts).toHaveLength(1);
  });

  it('NODE_TLS_REJECT_UNAUTHORIZED=0 does not turn verification off', async () => {
    const front = await tlsFront(good);
    const saved = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      await expect(api({ baseUrl: front.url('localhost'), retries: 0 }).feedPage(0, 0, 10)).rejects.toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    } finally {
      if (saved === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = saved;
    }
    expect(feedRequests()).toHaveLength(0);
  });

  it('with ca_file the same server is trusted (by name and by IP)', async () => {
    const front = await tlsFront(good);
    expect((await api({ baseUrl: front.url('localhost'), caFile: good.certFile }).feedPage(0, 0, 10)).body).toHaveLength(10);
    expect((await api({ baseUrl: front.url('127.0.0.1'), caFile: good.certFile }).feedPage(0, 0, 10)).body).toHaveLength(10);
    expect(feedRequests().map((r) => r.status)).toEqual([200, 200]);
  });

  it('ca_file does not skip the host name check', async () => {
    const front = await tlsFront(other);
    const err = await api({ baseUrl: front.url('localhost'), caFile: other.certFile, retries: 0 }).feedPage(0, 0, 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect((err as Error).message).toMatch(/altnames|hostname|ERR_TLS_CERT_ALTNAME_INVALID/i);
    expect(feedRequests()).toHaveLength(0);
  });

  it('an unreadable ca_file is a config error naming ca_file', () => {
    expect(() => api({ caFile: join(tmp, 'missing.pem') })).toThrow(/ca_file/);
  });
});

// ---- proxies -------------------------------------------------------------------------------

interface ProxyLog {
  url: string;
  /** `CONNECT host:port` or `METHOD absolute-url`, one per proxied request or tunnel. */
  seen: string[];
}

/** A tiny loopback forward proxy: CONNECT tunnels and absolute-form HTTP requests. */
async function startProxy(): Promise<ProxyLog> {
  const seen: string[] = [];
  const server = createHttpServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const target = new URL(req.url!);
    const up = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: target.pathname + target.search, headers: req.headers },
      (ur) => {
        res.writeHead(ur.statusCode!, ur.headers);
        ur.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('connect', (req, client: Socket, head: Buffer) => {
    seen.push(`CONNECT ${req.url}`);
    const [host, port] = [req.url!.slice(0, req.url!.lastIndexOf(':')), Number(req.url!.slice(req.url!.lastIndexOf(':') + 1))];
    const up = netConnect(port, host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(client).pipe(up);
    });
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  const kill = trackSockets(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push({ close: () => new Promise((r) => (kill(), server.close(() => r()))) });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const PROXY_ENV = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy'] as const;

/** Run `fn` with exactly `env` of the proxy variables set (the others unset), then restore. */
async function withProxyEnv<T>(env: Partial<Record<(typeof PROXY_ENV)[number], string>>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(PROXY_ENV.map((k) => [k, process.env[k]]));
  for (const k of PROXY_ENV) delete process.env[k];
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const k of PROXY_ENV) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
}

/** The proxy was asked for host:port (tunnel or absolute-form request). */
const sawTarget = (p: ProxyLog, hostPort: string) => p.seen.some((s) => s === `CONNECT ${hostPort}` || s.includes(`//${hostPort}/`));

describe('proxy', () => {
  let cert: Awaited<ReturnType<typeof selfSigned>>;
  beforeAll(async () => {
    cert = await selfSigned('proxied', 'DNS:localhost,IP:127.0.0.1');
  });

  it('config proxy carries http calls', async () => {
    const proxy = await startProxy();
    await withProxyEnv({}, async () => {
      expect((await api({ proxy: proxy.url }).feedPage(0, 0, 10)).body).toHaveLength(10);
    });
    expect(sawTarget(proxy, `127.0.0.1:${simPort}`)).toBe(true);
    expect(feedRequests()).toHaveLength(1);
  });

  it('config proxy carries https calls (tunnel), with TLS still verified end to end', async () => {
    const proxy = await startProxy();
    const front = await tlsFront(cert);
    await withProxyEnv({}, async () => {
      expect((await api({ proxy: proxy.url, baseUrl: front.url('localhost'), caFile: cert.certFile }).feedPage(0, 0, 10)).body).toHaveLength(10);
      await expect(api({ proxy: proxy.url, baseUrl: front.url('localhost'), retries: 0 }).feedPage(0, 0, 10)).rejects.toMatchObject({
        code: 'WCF_ERR_API_UNREACHABLE',
      });
    });
    expect(proxy.seen.filter((s) => s === `CONNECT localhost:${front.port}`)).toHaveLength(2);
    expect(feedRequests()).toHaveLength(1);
  });

  it('HTTP_PROXY from the environment carries http calls', async () => {
    const proxy = await startProxy();
    await withProxyEnv({ HTTP_PROXY: proxy.url }, async () => {
      expect((await api().feedPage(0, 0, 10)).body).toHaveLength(10);
    });
    expect(sawTarget(proxy, `127.0.0.1:${simPort}`)).toBe(true);
  });

  it('HTTPS_PROXY from the environment carries https calls', async () => {
    const proxy = await startProxy();
    const front = await tlsFront(cert);
    await withProxyEnv({ HTTPS_PROXY: proxy.url }, async () => {
      expect((await api({ baseUrl: front.url('localhost'), caFile: cert.certFile }).feedPage(0, 0, 10)).body).toHaveLength(10);
    });
    expect(proxy.seen).toContain(`CONNECT localhost:${front.port}`);
    expect(feedRequests()).toHaveLength(1);
  });

  it('NO_PROXY exempts a host from the environment proxy', async () => {
    const proxy = await startProxy();
    await withProxyEnv({ HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' }, async () => {
      expect((await api().feedPage(0, 0, 10)).body).toHaveLength(10);
    });
    expect(proxy.seen).toEqual([]);
    expect(feedRequests()).toHaveLength(1);
  });
});

describe('the cycle deadline', () => {
  it('passing while a call waits to retry: the call fails at once as unreachable (code 20), not as an internal error; the report still goes', async () => {
    const a = api({ retryMinDelayMs: 60_000 });
    sim.setFault('http500', { routes: ['GET /feedback'] });
    a.client.cycleDeadline.start(300);
    const err = await a.agent(sim.agid).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE', message: expect.stringMatching(/^\/feedback: aborted, cycle deadline of 0 s passed/) });
    expect(sim.requests.filter((r) => r.path.endsWith('/feedback'))).toHaveLength(1); // no retry after the deadline
    sim.setFault(null);
    // Calls that are not exempt are refused until the cycle's deadline is stopped; the report is exempt.
    await expect(a.feedPage(0, 0, 10)).rejects.toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    const fields = { agid: sim.agid, hostanme: 'h', plugin: 'dry-run', code: 20, maximum_rules: 1, score_threshold: 1, sync_time: '5', ts: 1, version: '0' };
    await expect(a.report(fields, [])).resolves.toBe(true);
    a.client.cycleDeadline.stop();
    await expect(a.feedPage(0, 0, 10)).resolves.toMatchObject({ body: expect.any(Array) });
  });
});
