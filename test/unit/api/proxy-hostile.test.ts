// Hostile proxies in front of an https API (the simulator behind a TLS front): one that never
// answers CONNECT, one that trickles its answer, one that floods it, and ones that refuse the
// tunnel (407, 302, 103) and keep the connection open. The connect timeout, the request and
// cycle deadlines and the agent's stop must end each attempt with a clear error, and the
// client must close its connection to the proxy (the proxy sees it go).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTlsFront, type TlsFront } from '../../../scripts/bench/tls-front.js';
import { ApiClient, type ClientOptions } from '../../../src/api/client.js';
import { ThreatIntelApi } from '../../../src/api/threat-intel.js';
import { waitFor } from '../../helpers/cli.js';
import { HostileProxy, type ProxyMode } from '../../helpers/hostile-proxy.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';

let sim: Simulator;
let front: TlsFront;
let tmp: string;
const clients: ApiClient[] = [];
const proxies: HostileProxy[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 200, seed: 5 });
  tmp = mkdtempSync(join(tmpdir(), 'wcf-proxy-'));
  front = await startTlsFront(sim.url, tmp);
});
afterAll(async () => {
  await front?.close();
  await sim?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});
beforeEach(() => sim.clearRequests());
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

async function proxy(mode: ProxyMode): Promise<HostileProxy> {
  const p = await HostileProxy.start(mode);
  proxies.push(p);
  return p;
}

const frontPort = () => Number(new URL(front.url).port);

function api(p: HostileProxy, over: Partial<ClientOptions> = {}): ThreatIntelApi {
  const client = new ApiClient({
    baseUrl: front.url,
    token: sim.token,
    authScheme: 'bearer',
    connectTimeoutMs: 600,
    requestTimeoutMs: 5000,
    requestDeadlineMs: 60_000,
    minBytesPerSecond: 16_384,
    retries: 0,
    maxResponseBytes: 1024 * 1024,
    caFile: front.caFile,
    proxy: p.url,
    userAgent: 'wcf-agent-test',
    logger: pino({ level: 'silent' }),
    ...over,
  });
  clients.push(client);
  return new ThreatIntelApi(client);
}

/** The call's error, or a failure of its own when it has not ended within `ms` (the bug: it never did). */
async function failureWithin(call: Promise<unknown>, ms: number): Promise<Error & { code?: string }> {
  let timer: NodeJS.Timeout | undefined;
  const started = performance.now();
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the call had not ended after ${ms} ms`)), ms);
  });
  try {
    await Promise.race([call, hung]);
  } catch (err) {
    if ((err as Error).message.startsWith('the call had not ended')) throw err;
    (err as { elapsedMs?: number }).elapsedMs = performance.now() - started;
    return err as Error & { code?: string };
  } finally {
    clearTimeout(timer);
  }
  throw new Error('the call succeeded through a hostile proxy');
}

/** The client has closed every connection it opened to the proxy. */
const proxyLetGo = (p: HostileProxy) => waitFor(() => p.open === 0, 'the client to close its connections to the proxy', 10_000);

describe('a proxy that accepts and never answers CONNECT', () => {
  it('connect_timeout_ms ends the attempt, naming the proxy, and the connection to the proxy is closed', async () => {
    const p = await proxy({ kind: 'silent' });
    const err = await failureWithin(api(p).feedPage(0, 0, 10), 15_000);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect(err.message).toMatch(/CONNECT_TIMEOUT: .*timeout: 600ms/);
    expect(err.message).toContain(`127.0.0.1:${new URL(p.url).port}`);
    expect(p.requests[0]).toMatch(new RegExp(`^CONNECT 127\\.0\\.0\\.1:${frontPort()} HTTP/1\\.1\r\n`));
    await proxyLetGo(p);
    expect(sim.requests).toHaveLength(0);
  });

  it('the request deadline ends it when the connect timeout is longer', async () => {
    const p = await proxy({ kind: 'silent' });
    const err = await failureWithin(api(p, { connectTimeoutMs: 60_000, requestDeadlineMs: 700 }).feedPage(0, 0, 10), 15_000);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect(err.message).toMatch(/no complete answer after \d+ ms \(request deadline 700 ms[^)]*\): ERR_PROXY_TUNNEL: the proxy 127\.0\.0\.1:\d+ accepted the connection and has not answered CONNECT/);
    await proxyLetGo(p);
  });

  it("the cycle's deadline ends it", async () => {
    const p = await proxy({ kind: 'silent' });
    const a = api(p, { connectTimeoutMs: 60_000 });
    a.client.cycleDeadline.start(500);
    const err = await failureWithin(a.feedPage(0, 0, 10), 15_000);
    a.client.cycleDeadline.stop();
    expect(err.message).toMatch(/aborted, cycle deadline of 1 s passed: ERR_PROXY_TUNNEL: the proxy .* has not answered CONNECT/);
    await proxyLetGo(p);
  });

  it('stopping the agent (SIGTERM aborts the client) ends it at once', async () => {
    const p = await proxy({ kind: 'silent' });
    const a = api(p, { connectTimeoutMs: 60_000 });
    const call = a.feedPage(0, 0, 10);
    await waitFor(() => p.requests.length === 1, 'the CONNECT to reach the proxy', 10_000);
    a.client.abort();
    const err = await failureWithin(call, 5000);
    expect(err.message).toMatch(/aborted, the agent is stopping: ERR_PROXY_TUNNEL: the proxy .* has not answered CONNECT/);
    await proxyLetGo(p);
  });
});

describe('the same silent proxy, other cases', () => {
  it('closing the client (a config reload) ends a tunnel still being opened', async () => {
    const p = await proxy({ kind: 'silent' });
    const a = api(p, { connectTimeoutMs: 60_000 });
    const call = a.feedPage(0, 0, 10);
    await waitFor(() => p.requests.length === 1, 'the CONNECT to reach the proxy', 10_000);
    await a.client.close();
    const err = await failureWithin(call, 5000);
    expect(err.message).toMatch(/ERR_PROXY_TUNNEL: the proxy .* has not answered CONNECT/);
    await proxyLetGo(p);
  });

  it('a plain-http API behind it (the proxy gets the request itself): the idle limit ends the call', async () => {
    const p = await proxy({ kind: 'silent' });
    const err = await failureWithin(api(p, { baseUrl: sim.url, requestTimeoutMs: 700 }).feedPage(0, 0, 10), 15_000);
    expect(err.message).toMatch(/HEADERS_TIMEOUT: Headers Timeout Error \(no answer within 700 ms\)/);
    expect(p.requests[0]).toMatch(/^GET http:\/\/127\.0\.0\.1:\d+\/api\/v1\/ips\?/);
    await proxyLetGo(p);
  });
});

describe('a proxy that trickles or floods its answer to CONNECT', () => {
  it('one byte every 0.2 s after the status line: connect_timeout_ms ends it', async () => {
    const p = await proxy({ kind: 'trickle', first: 'HTTP/1.1 200 OK\r\n', everyMs: 200 });
    const err = await failureWithin(api(p, { connectTimeoutMs: 1500 }).feedPage(0, 0, 10), 20_000);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect(err.message).toMatch(/CONNECT_TIMEOUT: .*timeout: 1500ms/);
    await proxyLetGo(p);
  });

  it('an answer that never ends its headers: refused once it passes the size cap, before any timeout', async () => {
    const p = await proxy({ kind: 'flood', bytes: 1024 * 1024 });
    const err = await failureWithin(api(p, { connectTimeoutMs: 30_000 }).feedPage(0, 0, 10), 20_000);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
    expect(err.message).toMatch(/ERR_PROXY_TUNNEL: .*answer to CONNECT is longer than 16384 bytes/);
    expect((err as { elapsedMs?: number }).elapsedMs).toBeLessThan(20_000);
    await proxyLetGo(p);
  });
});

describe('a proxy that refuses the tunnel and keeps the connection open', () => {
  const refusals = [
    ['407', 'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n'],
    ['302', 'HTTP/1.1 302 Found\r\nLocation: http://login.corp.example/\r\nContent-Length: 0\r\n\r\n'],
    ['103', 'HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload\r\n\r\n'],
  ] as const;
  for (const [status, head] of refusals) {
    it(`${status}: a clear error naming the answer, and the client closes its connection to the proxy`, async () => {
      const p = await proxy({ kind: 'answer', head });
      const err = await failureWithin(api(p, { connectTimeoutMs: 30_000 }).feedPage(0, 0, 10), 15_000);
      expect(err).toMatchObject({ code: 'WCF_ERR_API_UNREACHABLE' });
      expect(err.message).toMatch(new RegExp(`ERR_PROXY_TUNNEL: .*proxy 127\\.0\\.0\\.1:\\d+ answered CONNECT with HTTP/1\\.1 ${status} `));
      await proxyLetGo(p);
    });
  }

  it('repeated attempts leave no connection open (one per attempt leaked before)', async () => {
    const p = await proxy({ kind: 'answer', head: refusals[0][1] });
    const a = api(p, { connectTimeoutMs: 30_000 });
    for (let i = 0; i < 5; i++) await failureWithin(a.feedPage(0, 0, 10), 15_000);
    expect(p.accepted).toBe(5);
    await proxyLetGo(p);
  });

  it('control characters in the status line are escaped in the error (the text is the proxy\'s)', async () => {
    const p = await proxy({ kind: 'answer', head: 'HTTP/1.1 403 \x1b[2J\x1b]0;owned\x07 Forbidden\r\n\r\n' });
    const err = await failureWithin(api(p).feedPage(0, 0, 10), 15_000);
    expect(err.message).toContain('403');
    expect(err.message).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });
});

describe('an honest proxy', () => {
  it('carries the call; credentials in the proxy URL become a Proxy-Authorization header on the CONNECT only', async () => {
    const p = await proxy({ kind: 'tunnel', port: frontPort() });
    const a = api(p, { proxy: `http://agent%40corp:s%3Acret@127.0.0.1:${new URL(p.url).port}` });
    expect((await a.feedPage(0, 0, 10)).body).toHaveLength(10);
    expect(p.requests).toHaveLength(1);
    expect(p.requests[0]).toMatch(/\r\nproxy-authorization: Basic /i);
    const creds = /proxy-authorization: Basic (\S+)/i.exec(p.requests[0]!)![1]!;
    expect(Buffer.from(creds, 'base64').toString()).toBe('agent@corp:s:cret');
    // The API saw its own request, not the proxy's credentials.
    expect(sim.requests.map((r) => r.path)).toEqual(['/api/v1/ips']);
  });

  it('answers slower than connect_timeout_ms come through, on one tunnel for two calls', async () => {
    const p = await proxy({ kind: 'tunnel', port: frontPort() });
    sim.setFault('slow', { delayMs: 1500, count: 2 });
    try {
      const a = api(p, { connectTimeoutMs: 500 });
      expect((await a.feedPage(0, 0, 10)).body).toHaveLength(10);
      expect((await a.feedPage(0, 0, 10)).body).toHaveLength(10);
    } finally {
      sim.setFault(null);
    }
    expect(p.accepted).toBe(1);
  });

  it('an https:// proxy: TLS to the proxy, verified against ca_file too, then TLS to the API inside it', async () => {
    const p = await proxy({ kind: 'tunnel', port: frontPort() });
    mkdirSync(join(tmp, 'proxy-front'), { recursive: true });
    const proxyFront = await startTlsFront(p.url, join(tmp, 'proxy-front'));
    try {
      const httpsProxy = `https://127.0.0.1:${new URL(proxyFront.url).port}`;
      const both = join(tmp, 'api-and-proxy.pem');
      writeFileSync(both, readFileSync(front.caFile, 'utf8') + readFileSync(proxyFront.caFile, 'utf8'));
      expect((await api(p, { proxy: httpsProxy, caFile: both }).feedPage(0, 0, 10)).body).toHaveLength(10);
      expect(p.requests).toHaveLength(1);
      // The proxy's certificate is checked: trusted for the API only, the call fails at the proxy.
      const err = await failureWithin(api(p, { proxy: httpsProxy }).feedPage(0, 0, 10), 15_000);
      expect(err.message).toMatch(/ERR_PROXY_TUNNEL: connecting to the proxy 127\.0\.0\.1:\d+: self[- ]signed certificate/);
      expect(p.requests).toHaveLength(1);
    } finally {
      await proxyFront.close();
    }
  });

  it('NO_PROXY in the environment exempts the https API from HTTPS_PROXY', async () => {
    const p = await proxy({ kind: 'silent' });
    const saved = { HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY };
    process.env.HTTPS_PROXY = p.url;
    process.env.NO_PROXY = 'localhost,127.0.0.1';
    try {
      expect((await api(p, { proxy: undefined }).feedPage(0, 0, 10)).body).toHaveLength(10);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    expect(p.accepted).toBe(0);
  });
});
