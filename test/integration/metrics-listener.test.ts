import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { LISTENER_LIMITS } from '../../src/metrics/listen.js';

/**
 * The metrics listener of `wcf-agent run` under a flood of silent connections and a slow
 * client, with the production limits (docs/daemon.md, Metrics): the daemon holds at most
 * maxConnections of them, its memory does not grow with the flood, and it closes what it
 * holds at the headers deadline.
 */

let sim: Simulator;
const running: DaemonProcess[] = [];
const sockets: Socket[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: '50', score_threshold: '4', sync_time: '600', running: 'true' } });
  for (let i = 1; i <= 20; i++) sim.upsertIndicator({ ip: `203.0.113.${i}`, score: 9 });
});
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(running.splice(0).map((d) => d.stop()));
});
afterAll(async () => {
  await sim?.close();
});

async function start(): Promise<{ d: DaemonProcess; port: number; base: string }> {
  const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0 });
  const d = new DaemonProcess(cfg.path);
  running.push(d);
  const url = /(http:\/\/127\.0\.0\.1:(\d+))\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)!;
  await d.waitForLog(/^cycle done/);
  return { d, port: Number(url[2]), base: url[1]! };
}

/** The daemon's open sockets (its /proc/PID/fd entries that are sockets). */
function socketsOf(pid: number): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
    } catch {
      // closed between the listing and the read
    }
  }
  return n;
}

function rssMB(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

interface Conn {
  socket: Socket;
  received: string;
  closedAt: number | undefined;
}

/** A raw client that sends nothing unless told; resolves once connected. */
function open(port: number): Promise<Conn> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  const c: Conn = { socket, received: '', closedAt: undefined };
  socket.on('data', (d: Buffer) => (c.received += d.toString('latin1')));
  socket.on('error', () => undefined);
  socket.on('close', () => (c.closedAt = performance.now()));
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(c));
    socket.once('error', reject);
  });
}

const FLOOD = 3000;
/** How long the daemon may hold a silent connection: the headers deadline, the check interval, and slack for a loaded machine. */
const SILENT_LIFE_MS = LISTENER_LIMITS.headersTimeoutMs + LISTENER_LIMITS.checkEveryMs + 3000;

describe('metrics listener of `run` under a connection flood', () => {
  it(`${FLOOD} silent connections: the daemon holds at most ${LISTENER_LIMITS.maxConnections}, its RSS stays within 10 MB, it closes them all with 408 at the headers deadline, and serves scrapes after`, async () => {
    const { d, port, base } = await start();
    const socketsBefore = socketsOf(d.pid);
    const rssBefore = rssMB(d.pid);
    const conns: Conn[] = [];
    for (let i = 0; i < FLOOD; i += 100) conns.push(...(await Promise.all(Array.from({ length: 100 }, () => open(port)))));
    // The refused ones are closed right after their accept; the daemon holds the rest.
    const held = await waitFor(() => {
      const open = conns.filter((c) => c.closedAt === undefined).length;
      return open <= LISTENER_LIMITS.maxConnections ? open : undefined;
    }, `at most ${LISTENER_LIMITS.maxConnections} connections left open`, 10_000);
    expect(held).toBeGreaterThan(0);
    expect(socketsOf(d.pid) - socketsBefore).toBeLessThanOrEqual(LISTENER_LIMITS.maxConnections);
    const grewMB = rssMB(d.pid) - rssBefore;
    expect(grewMB, `RSS grew by ${grewMB.toFixed(1)} MB`).toBeLessThan(10);
    await d.waitForLog(/^metrics listener: \d+ connection\(s\) refused, 64 already open/);

    await waitFor(() => conns.every((c) => c.closedAt !== undefined), 'every silent connection to be closed by the daemon', SILENT_LIFE_MS);
    const kept = conns.filter((c) => c.received !== '');
    expect(kept.length).toBe(held);
    for (const c of kept) expect(c.received).toMatch(/^HTTP\/1\.1 408 /);
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
  });

  it('cuts a slowloris client (one header byte every 500 ms) at the headers deadline', async () => {
    const { port } = await start();
    const c = await open(port);
    const t0 = performance.now();
    c.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    const drip = setInterval(() => c.socket.writable && c.socket.write('a'), 500);
    try {
      await waitFor(() => c.closedAt !== undefined, 'the slow client to be cut', SILENT_LIFE_MS);
    } finally {
      clearInterval(drip);
    }
    expect(c.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.closedAt! - t0).toBeGreaterThanOrEqual(LISTENER_LIMITS.headersTimeoutMs - 100);
  });
});
