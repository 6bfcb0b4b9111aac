// The built agent (child processes of dist/cli.js) against hostile proxies in front of an https
// API (the simulator behind a TLS front): the daemon keeps cycling and polling through a proxy
// that stops answering CONNECT and exits promptly on SIGTERM; `sync --once` exits after a proxy
// refuses the tunnel and keeps the connection open; the daemon's open files do not grow with
// refused attempts; a trickled answer to CONNECT ends in a clear error with bounded memory.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTlsFront, type TlsFront } from '../../scripts/bench/tls-front.js';
import { CLI, fastFailConfig, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { HostileProxy, type ProxyMode } from '../helpers/hostile-proxy.js';
import { startSimulator, type Simulator } from '../simulator/index.js';

let sim: Simulator;
let front: TlsFront;
const dirs: string[] = [];
const running: DaemonProcess[] = [];
const proxies: HostileProxy[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 500, seed: 17, agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' } });
  const cfg = fastFailConfig(sim);
  dirs.push(cfg.dir);
  front = await startTlsFront(sim.url, cfg.dir);
});
afterAll(async () => {
  await front?.close();
  await sim?.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

async function proxy(mode: ProxyMode): Promise<HostileProxy> {
  const p = await HostileProxy.start(mode);
  proxies.push(p);
  return p;
}

/** A config for the https API through `p`: no retries, connect_timeout_ms 500 (fastFailConfig). */
function config(p: HostileProxy, extra: Record<string, unknown> = {}) {
  const cfg = fastFailConfig({ ...sim, url: front.url }, { ca_file: front.caFile, proxy: p.url, ...extra });
  dirs.push(cfg.dir);
  return cfg;
}

const frontPort = () => Number(new URL(front.url).port);
const openFiles = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** `sync --once --json`, killed if it has not exited within `ms` (the bug: it never did). */
async function syncWithin(path: string, ms: number, env: Record<string, string> = {}) {
  const child = execa(process.execPath, [CLI, 'sync', '--once', '--json', '--config', path], {
    reject: false,
    timeout: ms,
    env: { WCF_LOG_LEVEL: 'info', WCF_RETRY_MIN_DELAY_MS: '20', ...env },
  });
  // Peak resident memory while it runs (VmHWM), read until it exits.
  let peakKb = 0;
  const pid = child.pid!;
  const sampler = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch {
      /* exited between two samples */
    }
  }, 100);
  const r = await child.finally(() => clearInterval(sampler));
  expect(r.timedOut, `sync --once had not exited after ${ms} ms:\n${String(r.stderr).slice(-2000)}`).toBe(false);
  let out: { ok: boolean; code: number; error: string | null; message: string | null };
  try {
    out = JSON.parse(String(r.stdout)) as typeof out;
  } catch {
    throw new Error(`sync --once printed no JSON (exit ${r.exitCode}, signal ${r.signal}, peak ${Math.round(peakKb / 1024)} MB):\n${String(r.stderr).slice(-1500)}`);
  }
  return { exitCode: r.exitCode, out, stderr: String(r.stderr), peakMb: peakKb / 1024 };
}

describe('the daemon behind a proxy that stops answering CONNECT', () => {
  it('goes on: cycles and decision polls fail with a connect timeout and run again; SIGTERM exits promptly', async () => {
    const p = await proxy({ kind: 'tunnel', port: frontPort() });
    const { path } = config(p, { decision_poll_seconds: 1 });
    const d = new DaemonProcess(path, { WCF_LOG_LEVEL: 'debug' });
    running.push(d);
    await d.waitForLog(/^cycle done/, 1, 30_000);
    // The proxy goes silent; the tunnels it already carries are cut, so every call must CONNECT again.
    p.mode = { kind: 'silent' };
    p.dropAll();
    const accepted = p.accepted;
    await d.waitForLog(/^sync failed, previous firewall state kept: .*CONNECT_TIMEOUT.*has not answered CONNECT/, 2, 30_000);
    await d.waitForLog(/^decision poll failed: .*CONNECT_TIMEOUT.*has not answered CONNECT/, 1, 30_000);
    expect(p.accepted - accepted).toBeGreaterThanOrEqual(3);
    // Nothing left hanging on the silent proxy but the attempt in flight.
    expect(p.open).toBeLessThanOrEqual(2);

    const stopped = performance.now();
    d.signal('SIGTERM');
    const code = await Promise.race([d.exit(), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))]);
    expect(code).toBe(0);
    expect(performance.now() - stopped).toBeLessThan(15_000);
    expect(d.count(/^stopped$/)).toBe(1);
    await waitFor(() => p.open === 0, 'the stopped daemon to have closed its connections to the proxy', 10_000);
  });

  it('keeps its open files flat while a proxy refuses every tunnel with 407 and keeps the connection open', async () => {
    const p = await proxy({ kind: 'answer', head: 'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n' });
    const { path } = config(p);
    const d = new DaemonProcess(path);
    running.push(d);
    await waitFor(() => p.accepted >= 3, 'three refused attempts', 30_000);
    // The smallest of a few readings: a file the daemon opens for a moment is not a leak.
    const settled = async () => {
      let least = Infinity;
      for (let i = 0; i < 5; i++) {
        least = Math.min(least, openFiles(d.pid));
        await new Promise((r) => setTimeout(r, 40));
      }
      return least;
    };
    const before = await settled();
    await waitFor(() => p.accepted >= 23, 'twenty more refused attempts', 60_000);
    const after = await settled();
    expect(after - before).toBeLessThanOrEqual(3);
    expect(p.open).toBeLessThanOrEqual(1);
    // Each failed cycle is two attempts: its first call and the state report.
    expect(d.count(/^sync failed, previous firewall state kept: .*ERR_PROXY_TUNNEL: .*answered CONNECT with HTTP\/1\.1 407/)).toBeGreaterThanOrEqual(8);
  });
});

describe('sync --once through a proxy that refuses the tunnel and keeps the connection open', () => {
  const refusals = [
    ['407', 'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n'],
    ['302', 'HTTP/1.1 302 Found\r\nLocation: http://login.corp.example/\r\nContent-Length: 0\r\n\r\n'],
    ['103', 'HTTP/1.1 103 Early Hints\r\nLink: </x.css>; rel=preload\r\n\r\n'],
  ] as const;
  for (const [status, head] of refusals) {
    it(`${status}: exits (3) with an error naming the answer, after its retries, leaving no connection open`, async () => {
      const p = await proxy({ kind: 'answer', head });
      const { path } = config(p, { retries: 2 });
      const r = await syncWithin(path, 30_000);
      expect(r.exitCode).toBe(3);
      expect(r.out.ok).toBe(false);
      expect(r.out.error).toBe('WCF_ERR_API_UNREACHABLE');
      expect(r.out.message).toMatch(new RegExp(`answered CONNECT with HTTP/1\\.1 ${status} `));
      // Three attempts of the cycle's first call and the state report's own (which fails too).
      expect(p.accepted).toBeGreaterThanOrEqual(4);
      await waitFor(() => p.open === 0, 'no connection to the proxy left open', 5000);
    });
  }
});

describe('sync --once through a proxy that trickles its answer to CONNECT', () => {
  it('one byte every 0.2 s: ends with a connect timeout naming what the proxy sent, memory bounded', async () => {
    const p = await proxy({ kind: 'trickle', first: 'HTTP/1.1 200 OK\r\n', everyMs: 200 });
    const { path } = config(p, { connect_timeout_ms: 3000, request_timeout_ms: 5000 });
    // A heap cap so that a regression (Node's tunnel went to 4 GB, then crashed) fails here fast
    // instead of taking a shared machine's memory; the agent needs a fraction of it.
    const r = await syncWithin(path, 60_000, { NODE_OPTIONS: '--max-old-space-size=512' });
    expect(r.exitCode).toBe(3);
    expect(r.out.error).toBe('WCF_ERR_API_UNREACHABLE');
    expect(r.out.message).toMatch(/CONNECT_TIMEOUT: .*timeout: 3000ms\): the proxy 127\.0\.0\.1:\d+ has sent \d+ bytes of its answer to CONNECT/);
    expect(r.peakMb).toBeGreaterThan(0);
    expect(r.peakMb).toBeLessThan(250);
  });
});
