import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { CLI, fastFailConfig, runCli } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

/**
 * Hostile servers: each answer is built to stall, poison or flood the agent. What the
 * operator sees is checked: the exit code, the reported code, a cycle that ends (a generous
 * deadline, far below what the unbounded agent took), and the last good rules kept.
 */
let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({
    indicators: 3000,
    seed: 23,
    agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true', version: '0.1.0' },
  });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(() => sim.setFault(null));

interface SyncJson {
  ok: boolean;
  code: number;
  message: string | null;
  applied: number | null;
}
/** A config whose state already holds a good sync; returns it with the rules that sync wrote. */
async function afterGoodSync(extra: Record<string, unknown> = {}) {
  const cfg = fastFailConfig(sim, extra);
  const first = await runCli(['sync', '--once', '--config', cfg.path]);
  expect(first.exitCode, first.stderr).toBe(0);
  return { ...cfg, good: readFileSync(cfg.rules, 'utf8'), goodApplied: readFileSync(join(cfg.state, 'applied-dry-run.json'), 'utf8') };
}
async function timedSync(path: string) {
  const started = Date.now();
  const r = await runCli(['sync', '--once', '--json', '--config', path]);
  return { ...r, json: JSON.parse(r.stdout) as SyncJson, seconds: (Date.now() - started) / 1000 };
}
const lastReportCode = () => (sim.reports.at(-1)!.body as { code: number }).code;

describe('a server that trickles its answer', () => {
  it('one byte at a time, never idle long enough for a body timeout: the request deadline ends it (code 20), rules kept', async () => {
    const cfg = await afterGoodSync();
    for (const route of ['GET /feedback', 'GET /ips']) {
      sim.setFault('trickle', { routes: [route], delayMs: 300 });
      const r = await timedSync(cfg.path);
      expect(r.exitCode, r.stderr).toBe(3);
      expect(r.json.code).toBe(20);
      // request_timeout_ms 1000: the deadline is 2 x 1000 ms; a feed page also fails the byte-rate floor.
      expect(r.json.message).toMatch(route === 'GET /ips' ? /no complete answer after \d+ ms \(request deadline 2000 ms, or slower than 16384 bytes\/s\)/ : /no complete answer after \d+ ms \(request deadline 2000 ms\)/);
      expect(r.seconds).toBeLessThan(60);
      expect(readFileSync(cfg.rules, 'utf8')).toBe(cfg.good);
    }
  });

  it('with long request deadlines the cycle deadline ends the cycle (code 20), the report still goes out', async () => {
    // With retries: the retry loop is aborted too, and the error is still code 20.
    const cfg = await afterGoodSync({ request_timeout_ms: 30_000, request_deadline_ms: 600_000, min_bytes_per_second: 0, cycle_deadline_seconds: 10, retries: 2 });
    sim.setFault('trickle', { routes: ['GET /ips'], delayMs: 300, filter: 0 });
    const reports = sim.reports.length;
    const r = await timedSync(cfg.path);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.json.code).toBe(20);
    expect(r.json.message).toMatch(/cycle deadline of 10 s passed/);
    expect(r.seconds).toBeGreaterThanOrEqual(9);
    expect(r.seconds).toBeLessThan(90);
    expect(sim.reports.length).toBe(reports + 1);
    expect(lastReportCode()).toBe(20);
    expect(readFileSync(cfg.rules, 'utf8')).toBe(cfg.good);
  });

  it('the daemon goes on after a cycle that hit its deadline', async () => {
    const cfg = await afterGoodSync({ request_timeout_ms: 30_000, request_deadline_ms: 600_000, min_bytes_per_second: 0, cycle_deadline_seconds: 10 });
    sim.setFault('trickle', { routes: ['GET /ips'], delayMs: 300, filter: 0, count: 1 });
    const d = new DaemonProcess(cfg.path);
    try {
      const failed = await d.waitForLog(/^sync failed/, 1, 60_000);
      expect(failed.msg).toMatch(/cycle deadline of 10 s passed/);
      expect(failed.code).toBe('WCF_ERR_API_UNREACHABLE');
      await d.waitForLog(/^cycle done/, 1, 60_000);
      const ips = (text: string) => text.split('\n').filter((l) => l.startsWith('add ')).map((l) => l.split(' ')[2]).sort();
      // The same feed, a little later: scores only decay, so the set is the good one less any entry that
      // crossed the threshold meanwhile (under load the failed cycle can take tens of seconds).
      const after = ips(readFileSync(cfg.rules, 'utf8'));
      const good = ips(cfg.good);
      expect(after.filter((ip) => !good.includes(ip))).toEqual([]);
      expect(after.length).toBeGreaterThanOrEqual(Math.floor(good.length * 0.95));
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });
});

describe('a feed item stamped ten years ahead', () => {
  it('is counted and logged, and the cursor stays at most 10 minutes ahead of the agent clock', async () => {
    const cfg = fastFailConfig(sim);
    sim.setFault('futureTs', { filter: 0 });
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/1 feed items are stamped more than 600 s ahead of this host's clock/);
    const state = JSON.parse(readFileSync(join(cfg.state, 'state.json'), 'utf8')) as { cursor: number };
    expect(state.cursor).toBeLessThanOrEqual(Date.now() / 1000 + 600);
  });
});

describe('a server that never stops paging', () => {
  it('is refused once the pull passes max_feed_items (code 23), rules kept', async () => {
    const cfg = await afterGoodSync({ max_feed_items: 5000 });
    sim.setFault('endless', { filter: 0 });
    const r = await timedSync(cfg.path);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.json.code).toBe(23);
    expect(r.json.message).toMatch(/still paging after 5000 items in 5 pages/);
    expect(r.seconds).toBeLessThan(60);
    expect(readFileSync(cfg.rules, 'utf8')).toBe(cfg.good);
  });
});

const RAW_CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

describe('terminal escapes in a server error message', () => {
  it('never reach stderr, state.json or status raw: shown escaped', async () => {
    const cfg = await afterGoodSync();
    sim.setFault('http500', { message: 'boom\u001b]0;pwned\u0007\u001b[2J\r\n12:00:00 INFO  sync ok: forged' });
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).not.toMatch(RAW_CONTROLS);
    const raw = readFileSync(join(cfg.state, 'state.json'), 'utf8');
    const state = JSON.parse(raw) as { lastCycle: { message: string; code: number } };
    expect(state.lastCycle.code).toBe(22);
    expect(state.lastCycle.message).toContain('boom\\x1b]0;pwned\\x07\\x1b[2J\\r\\n12:00:00 INFO');
    expect(state.lastCycle.message).not.toMatch(RAW_CONTROLS);
    sim.setFault(null);
    const status = await runCli(['status', '--config', cfg.path]);
    expect(status.exitCode).toBe(0);
    expect(status.stdout).not.toMatch(RAW_CONTROLS);
    expect(status.stdout).toContain('\\x1b]0;pwned');
    expect(status.stdout.split('\n').filter((l) => l.includes('forged'))).toHaveLength(1);
    expect(readFileSync(cfg.rules, 'utf8')).toBe(cfg.good);
  });
});

describe('a proxy that never accepts the connection', () => {
  let holder: ChildProcess;
  const fillers: Socket[] = [];
  afterAll(() => {
    for (const s of fillers) s.destroy();
    holder?.kill('SIGKILL');
  });

  it('connect_timeout_ms ends the connection attempt to the proxy (code 20)', async () => {
    // A listening socket that never accepts, its backlog filled: the kernel drops further SYNs,
    // so a connection to it hangs in connect, as to a proxy that is down behind a firewall.
    holder = spawn('python3', ['-c', 'import socket,sys,time\ns=socket.socket()\ns.bind(("127.0.0.1",0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(600)'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise<number>((resolve) => holder.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    for (let i = 0; i < 3; i++) fillers.push(connect(port, '127.0.0.1').on('error', () => undefined));
    const cfg = fastFailConfig(sim, { proxy: `http://127.0.0.1:${port}`, connect_timeout_ms: 700, request_timeout_ms: 60_000 });
    const r = await timedSync(cfg.path);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.json.code).toBe(20);
    // The message names the connect timeout applied: the configured one, not a default.
    expect(r.json.message).toMatch(/timeout: 700ms/);
  });
});

describe('special files in state_dir', () => {
  it('a FIFO named applied-dry-run.json is set aside; the sync completes', async () => {
    const cfg = fastFailConfig(sim);
    mkdirSync(cfg.state, { recursive: true });
    execFileSync('mkfifo', [join(cfg.state, 'applied-dry-run.json')]);
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/is not a regular file \(a FIFO\); set aside/);
    expect(JSON.parse(readFileSync(join(cfg.state, 'applied-dry-run.json'), 'utf8')).entries.length).toBeGreaterThan(0);
  });
});

describe('a full disk under state_dir (a small tmpfs in a private mount namespace)', () => {
  it('the rules are applied and recorded; the feed cache is a warning and code 40', async () => {
    const cfg = fastFailConfig(sim, { dry_run_output: 'rules.ipset' });
    mkdirSync(cfg.state, { recursive: true });
    // 56 KiB: room for state.json, the lock, the instance id, the change history's first block and
    // the applied set (300 entries), not for the feed cache (3000 indicators x 21 bytes, 63 KB).
    // The mount dies with the namespace.
    const script = 'mount -t tmpfs -o size=56k,mode=0700 wcf-test "$0" && exec "$@"';
    const r = await execa('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, cfg.state, process.execPath, CLI, 'sync', '--once', '--json', '--config', cfg.path], {
      reject: false,
      env: { WCF_LOG_LEVEL: 'info' },
      timeout: 120_000,
    });
    const json = JSON.parse(String(r.stdout)) as SyncJson;
    expect(r.exitCode, String(r.stderr)).toBe(4);
    expect(json.code).toBe(40);
    expect(json.message).toMatch(/feed-cache\.bin.*ENOSPC/);
    expect(String(r.stderr)).toMatch(/feed cache not written, the firewall is updated anyway/);
    expect(json.applied).toBeGreaterThan(0);
    const rules = readFileSync(join(cfg.dir, 'rules.ipset'), 'utf8').split('\n').filter((l) => l.startsWith('add '));
    expect(rules).toHaveLength(json.applied!);
    expect(lastReportCode()).toBe(40);
  });
});
