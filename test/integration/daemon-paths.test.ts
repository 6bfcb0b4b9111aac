import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

/**
 * Paths of the daemon and of `sync --once` that only show under one particular
 * failure: a reload whose parts cannot be built, a state dir that cannot be written,
 * one of the three feeds failing alone, a stop during a pull, an unusable or
 * unrestorable last set. The agent runs as the built CLI against the simulator.
 */

const AGENT_CONFIG = { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' } as const;
/** A high-scoring address that the whitelist (filter 3) keeps out of every set. */
const WHITELISTED = '198.51.100.77';
/** A manual block (filter 2). */
const MANUAL = '198.51.100.88';

let sim: Simulator;
const running: DaemonProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 3000, seed: 17, agentConfig: { ...AGENT_CONFIG } });
  sim.upsertIndicator({ ip: WHITELISTED, score: 9.9 });
  sim.setDecision(WHITELISTED, 0);
  sim.setDecision(MANUAL, 1);
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  sim.setFault(null);
  await Promise.all(running.splice(0).map((d) => d.stop()));
  sim.setAgentConfig(sim.agid, { ...AGENT_CONFIG });
});

const setup = (extra: Record<string, unknown> = {}) => fastFailConfig(sim, extra);
function start(path: string): DaemonProcess {
  const d = new DaemonProcess(path);
  running.push(d);
  return d;
}
const entriesOf = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('add '))
    .map((l) => l.split(' ')[2]!)
    .sort();
const reportsSince = (n: number) => sim.reports.slice(n).map((r) => r.body as { code: number; blacklist: string[] });
const editConfig = (path: string, patch: Record<string, unknown>) => {
  const base = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  writeFileSync(path, JSON.stringify({ ...base, ...patch }));
};

describe('SIGHUP', () => {
  it('a reload whose parts cannot be built (state_dir is a file) keeps the running configuration and set', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const good = entriesOf(cfg.rules);
    const notADir = join(cfg.dir, 'not-a-dir');
    writeFileSync(notADir, '');
    editConfig(cfg.path, { state_dir: 'not-a-dir', maximum_rules: 1 });
    d.signal('SIGHUP');
    const failed = await d.waitForLog(/^config reload failed, keeping the running configuration/);
    expect(failed.msg).toMatch(/state_dir/);
    expect(d.count(/^configuration reloaded/)).toBe(0);
    // The old parts go on: the next cycles still write the old rules file, unchanged.
    const done = d.count(/^cycle done/);
    await d.waitForLog(/^cycle done/, done + 2);
    expect(entriesOf(cfg.rules)).toEqual(good);
    expect(readFileSync(notADir, 'utf8')).toBe('');
  });
});

describe('SIGHUP twice in a row', () => {
  it('the reloads run one after the other: the old objects are removed once, then one cycle with the new names', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    editConfig(cfg.path, { set_name: 'wcf-renamed' });
    d.signal('SIGHUP');
    d.signal('SIGHUP');
    // The kernel may merge two signals sent back to back into one (a standard signal does not
    // queue): one or two reloads, never interleaved.
    await d.waitForLog(/^configuration reloaded/);
    const after = d.logs.length;
    await waitFor(() => d.logs.slice(after).some((l) => /^cycle done/.test(l.msg) && Number(l.configGeneration) >= 1), 'a cycle after the reloads');
    expect(d.count(/^configuration reloaded/)).toBeLessThanOrEqual(2);
    // Interleaved, both reloads would have compared against the same old names and flushed twice.
    expect(d.count(/^owned object names or plugin changed: removing the old objects/)).toBe(1);
    expect(readFileSync(cfg.rules, 'utf8')).toMatch(/^add wcf-renamed /m);
    expect(readFileSync(cfg.rules, 'utf8')).not.toMatch(/^add wcf-blocklist /m);
  });
});

describe('a state dir that cannot be written', () => {
  it('sync --once: exit 4, report code 40, and the firewall is updated all the same (the feed cache is only a speed-up)', async () => {
    const cfg = setup();
    // The feed cache path is taken by a directory: its atomic rename over it fails.
    mkdirSync(join(cfg.state, 'feed-cache.bin'), { recursive: true });
    const reports = sim.reports.length;
    const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(4);
    const out = JSON.parse(r.stdout) as { ok: boolean; code: number; error: string; message: string };
    expect(out).toMatchObject({ ok: false, code: 40, error: 'WCF_ERR_STATE' });
    expect(out.message).toMatch(/feed-cache\.bin/);
    expect(reportsSince(reports).map((b) => b.code)).toEqual([40]);
    // The apply comes before the cache write: a full or broken state dir never stops protection.
    expect(entriesOf(cfg.rules).length).toBeGreaterThan(0);
  });
});

describe('one of the three feeds failing alone fails the whole pull', () => {
  it.each([
    [3, 'whitelist'],
    [2, 'manual blocks'],
  ] as const)('filter %s (%s): exit 3, the previous set stays exactly as it was', async (filter, _feed) => {
    const cfg = setup();
    const first = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(first.exitCode, first.stderr).toBe(0);
    const good = entriesOf(cfg.rules);
    expect(good).toContain(MANUAL);
    expect(good).not.toContain(WHITELISTED);

    const mark = sim.requests.length;
    sim.setFault('http500', { routes: ['GET /ips'], filter });
    const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, code: 22, error: 'WCF_ERR_API_STATUS' });
    // Applied without the whitelist, WHITELISTED (score 9.9) would be blocked; without the manual feed, MANUAL would go.
    expect(entriesOf(cfg.rules)).toEqual(good);
    // The other feeds were asked for: only the named one failed.
    const failed = sim.requests.slice(mark).filter((q) => q.path.endsWith('/ips') && q.status === 500);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((q) => q.query.filter === String(filter))).toBe(true);
  });
});

describe('stopping during a pull', () => {
  it('SIGTERM while a request hangs: "not reporting: the agent is stopping", no report sent after the signal', async () => {
    const cfg = setup({ request_timeout_ms: 60_000 });
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const mark = sim.requests.length;
    sim.setFault('slow', { delayMs: 30_000, routes: ['GET /ips'] });
    await waitFor(() => sim.requests.slice(mark).some((q) => q.path.endsWith('/ips')), 'a feed request in flight');
    const reports = sim.reports.length;
    d.signal('SIGTERM');
    expect(await d.exit()).toBe(0);
    expect(d.count(/^not reporting: the agent is stopping/)).toBe(1);
    expect(sim.reports.length).toBe(reports);
  });
});

describe('the start-up restore', () => {
  it.each([
    ['null', 'null'],
    ['an array', '[]'],
    ['entries not a list', '{"ts": 1, "plugin": "dry-run", "entries": "198.51.100.1"}'],
    ['ts missing', '{"plugin": "dry-run", "entries": []}'],
  ])('an applied file of valid JSON but the wrong shape (%s) is ignored with a warning; the daemon syncs', async (_what, text) => {
    const cfg = setup();
    mkdirSync(cfg.state, { recursive: true });
    writeFileSync(join(cfg.state, 'applied-dry-run.json'), text);
    const d = start(cfg.path);
    await d.waitForLog(/^applied-dry-run\.json has an unknown format; ignored/);
    await d.waitForLog(/^no last known good set to restore/);
    await d.waitForLog(/^cycle done/);
    expect(entriesOf(cfg.rules)).toContain(MANUAL);
  });

  it('a restore that fails is logged, the daemon goes on and applies once the firewall works again', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    expect(await d.stop()).toBe(0);
    // The rules file's place is taken by a directory: the dry-run backend cannot write it.
    rmSync(cfg.rules);
    mkdirSync(cfg.rules);
    const d2 = start(cfg.path);
    const failed = await d2.waitForLog(/^could not restore the last known good set/);
    expect(failed).toMatchObject({ code: 'WCF_ERR_FIREWALL' });
    await d2.waitForLog(/^sync failed/);
    rmSync(cfg.rules, { recursive: true });
    const done = d2.count(/^cycle done/);
    await d2.waitForLog(/^cycle done/, done + 1);
    expect(entriesOf(cfg.rules)).toContain(MANUAL);
  });
});
