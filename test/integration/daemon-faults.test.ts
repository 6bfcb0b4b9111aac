import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import type { FaultMode, FaultOptions } from '../simulator/faults.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

/**
 * Each class of API fault, limited to `GET /ips` so the state report still gets
 * through: the report carries the fault's `code` (docs/commands.md, "Exit codes and
 * reported codes"), `sync --once` exits 3, and the dry-run output stays as it
 * was. A pull that fails half-way through paging applies nothing of what it
 * had pulled. The `running` flag off and on again, and SIGINT, with the daemon.
 */

const AGENT_CONFIG = { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' } as const;

let sim: Simulator;
const running: DaemonProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 3000, seed: 41, agentConfig: { ...AGENT_CONFIG } });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterEach(async () => {
  sim.setFault(null);
  await Promise.all(running.splice(0).map((d) => d.stop()));
  sim.setAgentConfig(sim.agid, { ...AGENT_CONFIG });
});

function setup(extra: Record<string, unknown> = {}) {
  const cfg = fastFailConfig(sim, extra);
  dirs.push(cfg.dir);
  return cfg;
}
function start(path: string): DaemonProcess {
  const d = new DaemonProcess(path);
  running.push(d);
  return d;
}

interface SyncJson {
  ok: boolean;
  code: number;
  error: string | null;
  applied: number;
  reported: boolean;
}
interface Report {
  code: number;
  blacklist: string[];
  plugin: string;
}

async function sync(path: string, ...extra: string[]): Promise<{ exitCode: number; out: SyncJson; stderr: string }> {
  const r = await runCli(['sync', '--once', '--json', '--config', path, ...extra]);
  let out: SyncJson;
  try {
    out = JSON.parse(r.stdout) as SyncJson;
  } catch {
    throw new Error(`sync --json printed no JSON (exit ${r.exitCode}):\n${r.stdout}\n${r.stderr}`);
  }
  return { exitCode: r.exitCode, out, stderr: r.stderr };
}
const reportsSince = (mark: number): Report[] =>
  sim.reports
    .slice(mark)
    .filter((r) => r.agid === sim.agid)
    .map((r) => r.body as Report);
const entriesOf = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('add '))
    .map((l) => l.split(' ')[2]!)
    .sort();
const read = (p: string) => readFileSync(p, 'utf8');
const stateJson = (dir: string) => JSON.parse(read(join(dir, 'state.json'))) as { cursor?: number; lastFullPullAt?: number };

/** [mode, options, reported code, error class, what the log line says] */
const FAULTS: [FaultMode, FaultOptions, number, string, RegExp][] = [
  ['http500', {}, 22, 'WCF_ERR_API_STATUS', /HTTP 500/],
  ['truncated', {}, 23, 'WCF_ERR_API_RESPONSE', /not valid JSON/],
  ['badJson', {}, 23, 'WCF_ERR_API_RESPONSE', /not valid JSON/],
  ['wrongTypes', {}, 23, 'WCF_ERR_API_RESPONSE', /unexpected response shape/],
  ['wrongTypes', { wrongTypes: 'body' }, 23, 'WCF_ERR_API_RESPONSE', /unexpected response shape/],
  ['oversized', {}, 23, 'WCF_ERR_API_RESPONSE', /more than the requested limit/],
  ['unauthorized', { afterRequests: 0 }, 21, 'WCF_ERR_API_AUTH', /401/],
  ['reset', {}, 20, 'WCF_ERR_API_UNREACHABLE', /socket|ECONNRESET|other side closed/i],
];

describe('sync --once: each fault class on GET /ips is reported with its code', () => {
  let cfg: ReturnType<typeof setup>;

  beforeAll(async () => {
    cfg = setup();
    const r = await sync(cfg.path);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(entriesOf(read(cfg.rules)).length).toBeGreaterThan(0);
  });

  it.each(FAULTS)('%s %j -> code %i', async (mode, options, code, error, message) => {
    // What the previous (good) sync wrote; a sync rewrites it with fresh timeouts.
    const good = read(cfg.rules);
    const applied = read(join(cfg.state, 'applied-dry-run.json'));
    sim.setFault(mode, { ...options, routes: ['GET /ips'] });
    const mark = sim.reports.length;
    const r = await sync(cfg.path);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.out).toMatchObject({ ok: false, code, error, reported: true });
    const reports = reportsSince(mark);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.code).toBe(code);
    // The report tells what is still applied: the previous set.
    expect([...reports[0]!.blacklist].sort()).toEqual(entriesOf(good));
    // One clear log line for the failure.
    const failures = r.stderr.split('\n').filter((l) => l.includes('sync failed'));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(message);
    // Nothing touched.
    expect(read(cfg.rules)).toBe(good);
    expect(read(join(cfg.state, 'applied-dry-run.json'))).toBe(applied);

    sim.setFault(null);
    const ok = await sync(cfg.path);
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.out.code).toBe(0);
    expect(reportsSince(mark).at(-1)!.code).toBe(0);
  });
});

describe('a pull that fails half-way through paging applies nothing of it', () => {
  it('incremental pull: new indicators on the pages that came through are not applied', async () => {
    const cfg = setup({ page_size: 50 });
    const first = await sync(cfg.path);
    expect(first.exitCode, first.stderr).toBe(0);
    const good = read(cfg.rules);
    const cursor = stateJson(cfg.state).cursor!;
    expect(cursor).toBeGreaterThan(0);

    // 120 fresh top-scored indicators after the cursor: three pages of 50 for the next incremental pull.
    const fresh = Array.from({ length: 120 }, (_, i) => `198.19.${Math.floor(i / 100)}.${(i % 100) + 1}`);
    const base = Math.max(cursor + 1, Math.floor(Date.now() / 1000) - 200);
    fresh.forEach((ip, i) => sim.upsertIndicator({ ip, score: 9.9, ts: base + i }));
    try {
      // Page 1 answers (it holds 50 of the new indicators), page 2 fails.
      sim.setFault('http500', { routes: ['GET /ips'], filter: 0, skipRequests: 1 });
      const mark = sim.requests.length;
      const r = await sync(cfg.path);
      expect(r.exitCode, r.stderr).toBe(3);
      expect(r.out.code).toBe(22);
      const pulls = sim.requests.slice(mark).filter((q) => q.path.endsWith('/ips') && q.query.filter === '0');
      expect(pulls.map((q) => q.status)).toEqual([200, 500]);
      expect(Number(pulls[0]!.query.ts)).toBe(cursor); // incremental, from the saved cursor
      expect(read(cfg.rules)).toBe(good);
      for (const ip of fresh) expect(good).not.toContain(` ${ip}`);
      expect(stateJson(cfg.state).cursor).toBe(cursor); // the next pull asks again from the same place
      expect(reportsSince(0).at(-1)!.blacklist.some((ip) => fresh.includes(ip))).toBe(false);

      // Once the fault clears, the same indicators are applied: they were worth applying.
      sim.setFault(null);
      const ok = await sync(cfg.path);
      expect(ok.exitCode, ok.stderr).toBe(0);
      expect(entriesOf(read(cfg.rules))).toEqual(expect.arrayContaining(fresh));
    } finally {
      for (const ip of fresh) sim.removeIndicator(ip);
    }
  });

  it('full pull: a failure on page 3 applies nothing at all, even with --force', async () => {
    const cfg = setup({ page_size: 500 });
    sim.setFault('truncated', { routes: ['GET /ips'], filter: 0, skipRequests: 2 });
    const mark = sim.requests.length;
    const r = await sync(cfg.path, '--force');
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.out).toMatchObject({ code: 23, applied: 0 });
    const pulls = sim.requests.slice(mark).filter((q) => q.path.endsWith('/ips') && q.query.filter === '0');
    expect(pulls).toHaveLength(3);
    expect(existsSync(cfg.rules)).toBe(false);
    expect(existsSync(join(cfg.state, 'applied-dry-run.json'))).toBe(false);
    expect(stateJson(cfg.state).lastFullPullAt).toBeUndefined(); // the next pull is full again
    expect(reportsSince(0).at(-1)).toMatchObject({ code: 23, blacklist: [] });
  });
});

describe('the daemon reports each fault class and keeps its set', () => {
  it('every fault on GET /ips: report code, unchanged output, recovery', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    for (const [mode, options, code, , message] of FAULTS) {
      const before = entriesOf(read(cfg.rules));
      expect(before.length, mode).toBeGreaterThan(0);
      const mark = sim.reports.length;
      const failedLogs = d.count(/^sync failed/);
      sim.setFault(mode, { ...options, routes: ['GET /ips'] });
      const failing = () => reportsSince(mark).filter((r) => r.code === code);
      await waitFor(() => failing().length >= 1, `a report with code ${code} (${mode})`);
      // From the first failed cycle on, the output is frozen: compare across another failed cycle.
      const frozen = read(cfg.rules);
      expect(entriesOf(frozen), mode).toEqual(before);
      expect([...failing()[0]!.blacklist].sort(), mode).toEqual(before);
      await waitFor(() => failing().length >= 2, `a second report with code ${code} (${mode})`);
      expect(read(cfg.rules), mode).toBe(frozen);
      expect(d.logs.filter((l) => /^sync failed/.test(l.msg)).slice(failedLogs).every((l) => message.test(l.msg)), mode).toBe(true);
      sim.setFault(null);
      const cleared = sim.reports.length;
      await waitFor(() => reportsSince(cleared).some((r) => r.code === 0), `recovery after ${mode}`);
    }
    expect(await d.stop()).toBe(0);
  });
});

describe('running off, then on again (daemon)', () => {
  it('removes the rules while off, keeps reporting, and re-applies them when on', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const on = entriesOf(read(cfg.rules));
    expect(on.length).toBeGreaterThan(0);

    const off = sim.reports.length;
    sim.setAgentConfig(sim.agid, { running: 'false' });
    await waitFor(() => !existsSync(cfg.rules), 'the rules removed');
    // Still syncing and reporting, with nothing applied and no error.
    await waitFor(() => reportsSince(off).filter((r) => r.blacklist.length === 0).length >= 2, 'two reports while off');
    expect(reportsSince(off).filter((r) => r.blacklist.length === 0).every((r) => r.code === 0)).toBe(true);
    expect(d.count(/running is disabled/)).toBeGreaterThanOrEqual(2);
    expect(existsSync(cfg.rules)).toBe(false);

    const back = sim.reports.length;
    sim.setAgentConfig(sim.agid, { running: 'true' });
    await waitFor(() => existsSync(cfg.rules) && entriesOf(read(cfg.rules)).length > 0, 'the rules re-applied');
    // The same feed: the same set as before (not held back by the shrink guard, which only guards shrinking).
    const again = entriesOf(read(cfg.rules));
    const kept = on.filter((e) => again.includes(e));
    expect(kept.length).toBeGreaterThanOrEqual(on.length - 2); // an entry may have decayed out meanwhile
    await waitFor(() => reportsSince(back).some((r) => r.blacklist.length > 0 && r.code === 0), 'a report with the set again');
    expect(d.count(/shrink guard/)).toBe(0);
    expect(await d.stop()).toBe(0);
  });
});

describe('SIGINT stops the daemon like SIGTERM', () => {
  it.each([
    ['keep', true],
    ['flush', false],
  ] as const)('on_stop=%s: exit 0, rules kept=%s', async (onStop, kept) => {
    const cfg = setup({ on_stop: onStop });
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const good = read(cfg.rules);
    d.signal('SIGINT');
    expect(await d.exit()).toBe(0);
    expect(d.logs.find((l) => l.msg === 'stopping')).toMatchObject({ signal: 'SIGINT' });
    expect(d.count(/^stopped$/)).toBe(1);
    if (kept) expect(read(cfg.rules)).toBe(good);
    else expect(existsSync(cfg.rules)).toBe(false);
  });
});
