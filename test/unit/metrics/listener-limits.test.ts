import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentMetrics } from '../../../src/metrics/index.js';
import { LISTENER_LIMITS, parseListen, type ListenerLimits } from '../../../src/metrics/listen.js';
import { startMetricsServer, type HealthProbes, type MetricsServer } from '../../../src/metrics/server.js';
import { ROOT, waitFor } from '../../helpers/cli.js';

/**
 * The metrics listener's bounds, on the real server over loopback with short limits (the
 * production values are checked against docs/daemon.md below, and at full length against the
 * daemon in test/integration/metrics-listener.test.ts).
 */

/** Everything long, so that one test sees only the limit it shortens. */
const LONG: ListenerLimits = { maxConnections: 1000, headersTimeoutMs: 60_000, requestTimeoutMs: 120_000, keepAliveTimeoutMs: 60_000, idleTimeoutMs: 120_000, checkEveryMs: 1000 };

interface Client {
  socket: Socket;
  /** What the server sent. */
  received: string;
  /** Set once the server closed (or reset) the connection. */
  closed: boolean;
}

const clients: Client[] = [];
let server: MetricsServer | undefined;
const warnings: string[] = [];
const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });

afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy();
  await server?.close();
  server = undefined;
  warnings.length = 0;
});

async function start(limits: Partial<ListenerLimits>, health?: HealthProbes): Promise<{ port: number; url: string }> {
  server = await startMetricsServer(parseListen('127.0.0.1:0'), new AgentMetrics({ defaultMetrics: false }).registry, logger, health, { ...LONG, ...limits });
  return { port: Number(new URL(server.url).port), url: server.url };
}

/** A raw TCP client, connected; it sends nothing unless told. */
async function open(port: number): Promise<Client> {
  const socket = connect(port, '127.0.0.1');
  const c: Client = { socket, received: '', closed: false };
  clients.push(c);
  socket.on('data', (d: Buffer) => (c.received += d.toString('latin1')));
  socket.on('error', () => undefined);
  socket.on('close', () => (c.closed = true));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return c;
}

const closedWithin = (c: Client, ms: number, what: string) => waitFor(() => c.closed, what, ms, 20);

/** Sends `head`, then a byte every 50 ms until the server closes the connection (3 s at most). */
async function trickle(c: Client, head: string, what: string): Promise<void> {
  c.socket.write(head);
  const drip = setInterval(() => c.socket.writable && c.socket.write('a'), 50);
  try {
    await closedWithin(c, 3000, what);
  } finally {
    clearInterval(drip);
  }
}

describe('metrics listener bounds', () => {
  it('holds at most maxConnections: the ones past it are closed on accept, counted in a warning, and a new client is served once one leaves', async () => {
    const { port, url } = await start({ maxConnections: 4 });
    const all: Client[] = [];
    for (let i = 0; i < 10; i++) all.push(await open(port));
    // The server closes each refused connection right after accepting it; the first four stay.
    await waitFor(() => all.filter((c) => c.closed).length === 6, 'six connections refused', 5000, 20);
    expect(all.slice(0, 4).map((c) => c.closed)).toEqual([false, false, false, false]);
    expect(all.slice(4).every((c) => c.closed && c.received === '')).toBe(true);
    expect(warnings).toEqual(['metrics listener: 1 connection(s) refused, 4 already open (a client holding connections open, or a flood of the port)']);
    // Full: a scrape is refused too; one silent client gone, it is served.
    await expect(fetch(url)).rejects.toThrow();
    all[0]!.socket.destroy();
    await waitFor(async () => (await fetch(url).then((r) => r.status, () => 0)) === 200, 'a scrape to be served again', 5000);
  });

  it('closes a silent connection at the headers deadline with 408', async () => {
    const { port } = await start({ headersTimeoutMs: 300, requestTimeoutMs: 10_000, checkEveryMs: 50 });
    const c = await open(port);
    await closedWithin(c, 3000, 'the silent connection to be closed');
    expect(c.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts a slowloris client (a header byte every 50 ms, never the end of the headers) at the headers deadline', async () => {
    const { port } = await start({ headersTimeoutMs: 400, requestTimeoutMs: 10_000, checkEveryMs: 50 });
    const c = await open(port);
    await trickle(c, 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'the slow client to be cut');
    expect(c.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts a request whose body trickles in (a byte every 50 ms) at the request deadline', async () => {
    // Answered at once (the listener reads no body), then the trickle goes on until the deadline.
    const { port } = await start({ headersTimeoutMs: 300, requestTimeoutMs: 500, checkEveryMs: 50 });
    const c = await open(port);
    await trickle(c, 'POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n', 'the slow request to be cut');
    expect(c.received).toMatch(/^HTTP\/1\.1 405 /);
  });

  it('closes a kept-alive connection idle after its answer at the keep-alive deadline', async () => {
    const { port } = await start({ keepAliveTimeoutMs: 300 });
    const c = await open(port);
    c.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await closedWithin(c, 3000, 'the kept-alive connection to be closed');
    expect(c.received).toMatch(/^HTTP\/1\.1 200 /);
    expect(c.received).toMatch(/keep-alive/i);
  });

  it('destroys a connection on which nothing moves past the idle deadline (an answer that never comes)', async () => {
    const hung: HealthProbes = { live: () => ({ ok: true, reason: 'alive' }), ready: () => new Promise(() => undefined) };
    const { port } = await start({ idleTimeoutMs: 300 }, hung);
    const c = await open(port);
    c.socket.write('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await closedWithin(c, 3000, 'the idle connection to be destroyed');
    expect(c.received).toBe('');
  });

  it('the production limits are the ones docs/daemon.md states', () => {
    const doc = readFileSync(join(ROOT, 'docs/daemon.md'), 'utf8').replace(/\s+/g, ' ');
    const num = (re: RegExp) => {
      const m = re.exec(doc);
      if (!m) throw new Error(`docs/daemon.md does not state ${re}`);
      return Number(m[1]);
    };
    expect({
      maxConnections: num(/at most (\d+) connections open at once/),
      headersTimeoutMs: num(/headers must be complete within (\d+) s/) * 1000,
      requestTimeoutMs: num(/a whole request within (\d+) s/) * 1000,
      keepAliveTimeoutMs: num(/kept-alive connection is closed (\d+) s after its last answer/) * 1000,
      idleTimeoutMs: num(/nothing moves for (\d+) s is destroyed/) * 1000,
      checkEveryMs: num(/deadlines are checked every (\d+) s/) * 1000,
    }).toEqual(LISTENER_LIMITS);
  });
});
