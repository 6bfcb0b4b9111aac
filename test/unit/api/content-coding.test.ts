// Compression on the wire: gzip answers decoded within max_response_mb, the state report
// gzip-encoded only once the server has said it takes it, a 415 answered by a plain resend,
// and the hostile cases (an inflating bomb, a damaged stream, a coding nobody asked for).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync, createGzip } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient, ClientOptions, RequestInfo } from '../../../src/api/client.js';
import { ThreatIntelApi } from '../../../src/api/threat-intel.js';
import { testApi } from '../../helpers/api-client.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';

let sim: Simulator;
const clients: ApiClient[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 3000, seed: 5 });
});
afterAll(async () => {
  await sim?.close();
});
beforeEach(() => {
  sim.setCompression(false);
  sim.setFault(null);
  sim.clearRequests();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

function api(baseUrl = sim.url, over: Partial<ClientOptions> = {}): ThreatIntelApi {
  return testApi(clients, { baseUrl, token: sim.token, ...over });
}

/** A server of the test's own on loopback (port 0), for answers the simulator never gives. */
async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, res, Buffer.concat(chunks)));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
}

const fields = { agid: 'agent-1', hostanme: 'h', plugin: 'dry-run', code: 0, maximum_rules: 5000, score_threshold: 1, sync_time: '15', ts: 1, version: '0' };
const blacklist = Array.from({ length: 3000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`);
const lastCall = (path: string) => sim.calls.filter((c) => c.path.endsWith(path)).at(-1)!;

describe('gzip answers', () => {
  it('a server that compresses: the same feed page, a fraction of the bytes on the wire', async () => {
    const plain = await api().feedPage(0, 0, 1000);
    const plainBytes = lastCall('/ips').bytesOut;
    sim.setCompression(true);
    const zipped = await api().feedPage(0, 0, 1000);
    const zippedBytes = lastCall('/ips').bytesOut;
    expect(zipped.body).toEqual(plain.body);
    expect(zippedBytes * 3).toBeLessThan(plainBytes);
  });

  it('a server that does not compress is answered as before (Accept-Encoding sent, plain answer read)', async () => {
    const seen: (string | undefined)[] = [];
    const url = await serve((req, res) => {
      seen.push(req.headers['accept-encoding']);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([{ agid: 'agent-1', config: {} }]));
    });
    await expect(api(url).agents()).resolves.toHaveLength(1);
    expect(seen).toEqual(['gzip']);
  });

  it('an answer that inflates past max_response_mb is refused at the limit, naming the key, never held whole', async () => {
    // Spaces without end, ~1,000 to 1 in gzip: only the agent's limit can end this answer.
    let sent = 0;
    let closed = false;
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      const gz = createGzip({ level: 9 });
      gz.pipe(res);
      const chunk = Buffer.alloc(1 << 20, 0x20);
      const pump = () => {
        while (!closed) {
          sent++;
          if (!gz.write(chunk)) return void gz.once('drain', pump);
        }
      };
      res.on('close', () => {
        closed = true;
        gz.destroy();
      });
      pump();
    });
    const before = process.memoryUsage().rss;
    const err = await api(url, { maxResponseBytes: 4 * 1024 * 1024, retries: 0 }).agents().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_RESPONSE', message: expect.stringMatching(/exceeds max_response_mb \(4 MiB decoded\)/) });
    await expect.poll(() => closed).toBe(true); // the connection was ended, not left streaming
    expect(sent).toBeGreaterThan(4);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  });

  it('a damaged gzip answer is a garbled answer: retried, and the retry succeeds', async () => {
    let n = 0;
    const good = gzipSync(JSON.stringify([{ agid: 'agent-1', config: {} }]));
    const url = await serve((_req, res) => {
      n++;
      const body = n === 1 ? good.subarray(0, good.length - 6) : good;
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length }).end(body);
    });
    await expect(api(url).agents()).resolves.toHaveLength(1);
    expect(n).toBe(2);
  });

  it('a Content-Encoding the agent did not ask for is refused, named and escaped', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'br\x9b2J' }).end('xx');
    });
    const err = (await api(url, { retries: 0 }).agents().catch((e: unknown) => e)) as Error;
    expect(err).toMatchObject({ code: 'WCF_ERR_API_RESPONSE' });
    expect(err.message).toContain('Content-Encoding "br\\x9b2J" is not one the agent asked for (gzip)');
  });
});

describe('body bytes on the wire, as the metrics count them', () => {
  it('each attempt tells the body bytes that went each way: the encoded ones, within what the socket carried', async () => {
    const seen: RequestInfo[] = [];
    const a = api();
    a.client.onRequest = (info) => seen.push(info);
    await a.feedPage(0, 0, 1000);
    sim.setCompression(true);
    await a.feedPage(0, 0, 1000);
    await a.report(fields, blacklist); // the answer above advertised gzip bodies: this one goes gzip-encoded
    const [plain, zipped, report] = seen;
    const calls = sim.calls.slice(-3);
    // The socket's bytes are the body's plus a few hundred of headers.
    for (const [info, wire] of [[plain!, calls[0]!.bytesOut], [zipped!, calls[1]!.bytesOut], [report!, calls[2]!.bytesIn]] as const) {
      const body = info.method === 'POST' ? info.sentBytes : info.receivedBytes;
      expect(body).toBeGreaterThan(0);
      expect(wire - body).toBeGreaterThan(0);
      expect(wire - body).toBeLessThan(1024);
    }
    expect(zipped!.receivedBytes * 3).toBeLessThan(plain!.receivedBytes);
    expect(report!.sentBytes * 3).toBeLessThan(JSON.stringify({ ...fields, blacklist }).length);
    expect(plain!.sentBytes).toBe(0);
  });
});

describe('gzip request bodies (the state report)', () => {
  it('plain until the server says it takes gzip, then gzip; the server stores the same report', async () => {
    const a = api();
    await a.report(fields, blacklist);
    const plainBytes = lastCall('/feedback').bytesIn;
    sim.setCompression(true);
    await a.report(fields, blacklist); // this answer is the first to advertise gzip bodies
    expect(lastCall('/feedback').bytesIn).toBe(plainBytes);
    await a.report({ ...fields, ts: 2 }, blacklist);
    expect(lastCall('/feedback').bytesIn * 3).toBeLessThan(plainBytes);
    const stored = await a.agent(sim.agid);
    expect(stored).toMatchObject({ ts: 2, blacklist });
  });

  it('a 415 to a gzip body: sent again plain at once, and plain from then on', async () => {
    const got: { encoding: string | undefined; entries: number }[] = [];
    const url = await serve((req, res, body) => {
      if (req.method === 'POST') {
        const encoding = req.headers['content-encoding'];
        got.push({ encoding, entries: encoding ? -1 : (JSON.parse(body.toString()) as { blacklist: string[] }).blacklist.length });
        if (encoding) return void res.writeHead(415, { 'accept-encoding': 'gzip' }).end();
      }
      // Claims to take gzip bodies in every answer (a misconfigured proxy in front of the API).
      res.writeHead(200, { 'content-type': 'application/json', 'accept-encoding': 'gzip' }).end('[]');
    });
    const a = api(url);
    await a.agents();
    await expect(a.report(fields, blacklist)).resolves.toBe(true);
    await expect(a.report(fields, blacklist)).resolves.toBe(true);
    expect(got).toEqual([
      { encoding: 'gzip', entries: -1 },
      { encoding: undefined, entries: 3000 },
      { encoding: undefined, entries: 3000 },
    ]);
  });

  it('Accept-Encoding "gzip;q=0" in an answer does not count as taking gzip', async () => {
    const encodings: (string | undefined)[] = [];
    const url = await serve((req, res) => {
      if (req.method === 'POST') encodings.push(req.headers['content-encoding']);
      res.writeHead(200, { 'content-type': 'application/json', 'accept-encoding': 'identity, gzip;q=0' }).end('[]');
    });
    const a = api(url);
    await a.agents();
    await a.report(fields, blacklist);
    expect(encodings).toEqual([undefined]);
  });
});
