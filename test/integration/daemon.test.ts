import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import type { FaultMode, FaultOptions } from '../simulator/faults.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

let sim: Simulator;
const running: DaemonProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    indicators: 3000,
    seed: 11,
    agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true', version: '0.1.0' },
  });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  sim.setFault(null);
  await Promise.all(running.splice(0).map((d) => d.stop()));
});

function setup(extra: Record<string, unknown> = {}) {
  return fastFailConfig(sim, extra);
}
function start(path: string, env: Record<string, string> = {}): DaemonProcess {
  const d = new DaemonProcess(path, env);
  running.push(d);
  return d;
}
interface AppliedEntry {
  cidr: string;
  reason: string;
  expiresAt: number | null;
}
const appliedIn = (dir: string) => (JSON.parse(readFileSync(join(dir, 'state', 'applied-dry-run.json'), 'utf8')) as { entries: AppliedEntry[] }).entries;
/** Entries of `before` that have not reached their expiry yet must all be in `after`. */
function expectKept(before: AppliedEntry[], after: AppliedEntry[]): void {
  const now = Date.now() / 1000;
  const present = new Set(after.map((e) => e.cidr));
  for (const e of before) if (e.expiresAt === null || e.expiresAt > now + 1) expect(present.has(e.cidr), e.cidr).toBe(true);
}
/** A daemon that ran one cycle and stopped: its config and what it applied. */
async function syncedOnceAndStopped(): Promise<{ cfg: ReturnType<typeof setup>; applied: Array<string | undefined> }> {
  const cfg = setup();
  const d = start(cfg.path);
  await d.waitForLog(/^cycle done/);
  expect(await d.stop()).toBe(0);
  return { cfg, applied: entriesOf(readFileSync(cfg.rules, 'utf8')) };
}
/** The daemon started again with its rules file gone and the API unreachable: what it writes comes from the restore alone. */
function restartOffline(cfg: { path: string; rules: string }): DaemonProcess {
  rmSync(cfg.rules);
  const base = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
  writeFileSync(cfg.path, JSON.stringify({ ...base, base_url: 'http://127.0.0.1:9/api/v1' }));
  return start(cfg.path);
}
const entriesOf = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('add '))
    .map((l) => l.split(' ')[2])
    .sort();

describe('daemon schedule', () => {
  it('syncs at once, then every sync_time, and reports each cycle', async () => {
    const { path, rules } = setup();
    const before = sim.reports.length;
    const d = start(path);
    await d.waitForLog(/^cycle done/, 3);
    expect(sim.reports.length - before).toBeGreaterThanOrEqual(3);
    expect(entriesOf(readFileSync(rules, 'utf8')).length).toBeGreaterThan(0);
    expect(d.count(/sync failed/)).toBe(0);
    // Never sooner than sync_time (5 minutes of 100 ms, no jitter): each wait starts when a
    // cycle ends, so from one "cycle done" to the next is at least that long (load only adds).
    const times = d.logs.filter((l) => /^cycle done/.test(l.msg)).map((l) => l.time as number);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(5 * 100);
    // One report per cycle: cycles never overlap or repeat.
    expect(sim.reports.length - before).toBe(times.length);
    expect(await d.stop()).toBe(0);
  });

  it('a new sync_time from the server reschedules', async () => {
    const { path, dir } = setup();
    const d = start(path);
    await d.waitForLog(/^cycle done/);
    sim.setAgentConfig(sim.agid, { sync_time: '50' }); // 5 s at the test's 100 ms minute
    try {
      // The cycle that reads the new value schedules the next one 5 s on; the state file is
      // written in two steps (the cycle, then the schedule), so poll until both are in.
      const read = () => JSON.parse(readFileSync(join(dir, 'state', 'state.json'), 'utf8')) as { nextSyncAt?: number; lastCycle?: { ts: number }; settings?: { sync_time: number } };
      const status = await waitFor(() => {
        const s = read();
        return s.settings?.sync_time === 50 && s.nextSyncAt !== undefined && s.lastCycle && s.nextSyncAt >= s.lastCycle.ts + 4 ? s : undefined;
      }, 'a schedule 5 s after the last cycle');
      expect(status.nextSyncAt! - status.lastCycle!.ts).toBeLessThanOrEqual(6);
      // And it keeps to it: no cycle before the scheduled time.
      const done = d.count(/^cycle done/);
      await d.waitForLog(/^cycle done/, done + 1, 30_000);
      const next = d.logs.filter((l) => /^cycle done/.test(l.msg))[done]!;
      expect((next.time as number) / 1000).toBeGreaterThanOrEqual(status.nextSyncAt!);
    } finally {
      sim.setAgentConfig(sim.agid, { sync_time: '5' });
    }
  });
});

describe('daemon under API faults keeps the applied set and recovers', () => {
  const faults: [FaultMode, FaultOptions, RegExp][] = [
    ['http500', {}, /HTTP 500/],
    ['truncated', {}, /not valid JSON|connection lost/],
    ['wrongTypes', {}, /unexpected response shape/],
    ['badJson', {}, /not valid JSON/],
    ['reset', {}, /socket|ECONNRESET|other side closed/i],
    ['unauthorized', { afterRequests: 1 }, /401/],
    ['slow', { delayMs: 5000 }, /timeout/i],
    ['oversized', { oversize: 'items' }, /more than the requested limit/],
  ];

  it.each(faults)('%s', async (mode, options, message) => {
    const { path, rules } = setup();
    const d = start(path);
    await d.waitForLog(/^cycle done/);
    const good = readFileSync(rules, 'utf8');
    sim.setFault(mode, options);
    const failedBefore = d.count(/^sync failed/);
    const failure = await d.waitForLog(/^sync failed/, failedBefore + 2);
    expect(failure.msg).toMatch(message);
    expect(readFileSync(rules, 'utf8')).toBe(good);
    sim.setFault(null);
    const done = d.count(/^cycle done/);
    await d.waitForLog(/^cycle done/, done + 1);
    expect(entriesOf(readFileSync(rules, 'utf8')).length).toBeGreaterThan(0);
  });

  it('an empty full pull is held back one cycle and applied only when the next pull agrees', async () => {
    // Always full pulls: an incremental pull that comes back empty only means "nothing new".
    const { path, rules } = setup({ full_resync_hours: 0 });
    const d = start(path);
    await d.waitForLog(/^cycle done/);
    const good = readFileSync(rules, 'utf8');
    const reports = sim.reports.length;
    sim.setFault('empty');
    await d.waitForLog(/shrink guard/);
    expect(readFileSync(rules, 'utf8')).toBe(good);
    // The report of the held-back cycle is sent after the log line: wait for it.
    const held = await waitFor(
      () => sim.reports.slice(reports).map((r) => r.body as { code: number; blacklist: string[] }).find((b) => b.code === 50),
      'a report with code 50',
    );
    expect(held.blacklist.length).toBe(entriesOf(good).length);
    // The next pull agrees: now the shrink is applied (manual blocks remain).
    await d.waitForLog(/two pulls agree/);
    await waitFor(() => entriesOf(readFileSync(rules, 'utf8')).length < entriesOf(good).length, 'shrunk set applied');
  });
});

describe('incremental pulls', () => {
  it('an empty incremental pull means nothing new: the score entries stay', async () => {
    const { path, dir } = setup();
    const d = start(path);
    await d.waitForLog(/^cycle done/);
    const before = appliedIn(dir).filter((e) => e.reason === 'score');
    expect(before.length).toBeGreaterThan(0);
    sim.setFault('empty'); // every /ips answer empty, the manual-decision feeds included
    const done = d.count(/^cycle done/);
    await d.waitForLog(/^cycle done/, done + 2);
    expect(d.count(/shrink guard/)).toBe(0);
    expectKept(before, appliedIn(dir));
  });
});

describe('daemon lifecycle', () => {
  /** A daemon after its first cycle, with its next cycle's first request held by the API for 30 s. */
  async function heldInPull() {
    const { path, rules } = setup({ request_timeout_ms: 60_000 });
    const d = start(path);
    await d.waitForLog(/^cycle done/);
    const good = readFileSync(rules, 'utf8');
    const mark = sim.requests.length;
    sim.setFault('slow', { delayMs: 30_000 });
    const held = await waitFor(() => sim.requests.slice(mark)[0], 'a request in flight');
    return { d, rules, good, held };
  }

  it('SIGTERM during a slow pull exits 0 promptly without touching the set', async () => {
    const { d, rules, good, held } = await heldInPull();
    d.signal('SIGTERM');
    expect(await d.exit()).toBe(0);
    // Promptly: it did not wait for the slow answer (the server never got to send it).
    expect(held.status).not.toBe(200);
    expect(readFileSync(rules, 'utf8')).toBe(good);
  });

  it('SIGTERM after a SIGHUP during a slow pull: the pull, started with the old configuration, is ended too', async () => {
    const { d, rules, good, held } = await heldInPull();
    // The reload is answered at once; the cycle in flight goes on with the client it started with.
    d.signal('SIGHUP');
    await d.waitForLog(/^configuration reloaded/);
    d.signal('SIGTERM');
    expect(await d.exit()).toBe(0);
    // It did not wait for the slow answer (the server never got to send it).
    expect(held.status).not.toBe(200);
    expect(d.count(/^cycle done/)).toBe(1);
    expect(readFileSync(rules, 'utf8')).toBe(good);
  });

  it('on_stop=flush removes the rules on SIGTERM', async () => {
    const { path, rules } = setup({ on_stop: 'flush' });
    const d = start(path);
    await d.waitForLog(/^cycle done/);
    expect(existsSync(rules)).toBe(true);
    expect(await d.stop()).toBe(0);
    expect(existsSync(rules)).toBe(false);
  });

  it('SIGHUP takes a valid new config and refuses a bad one', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const victim = entriesOf(readFileSync(cfg.rules, 'utf8')).find((e) => !e!.includes('/'))!;
    const base = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(cfg.path, JSON.stringify({ ...base, allowlist: [victim] }));
    d.signal('SIGHUP');
    await d.waitForLog(/configuration reloaded/);
    await waitFor(() => !entriesOf(readFileSync(cfg.rules, 'utf8')).includes(victim), 'allowlisted entry removed');

    writeFileSync(cfg.path, '{"agid": ');
    d.signal('SIGHUP');
    await d.waitForLog(/config reload refused/);
    const done = d.count(/^cycle done/);
    await d.waitForLog(/^cycle done/, done + 1);
    expect(entriesOf(readFileSync(cfg.rules, 'utf8'))).not.toContain(victim);
  });

  it('restart without network restores the last set before any request', async () => {
    const { cfg, applied } = await syncedOnceAndStopped();
    const d2 = restartOffline(cfg);
    const restored = await d2.waitForLog(/restored the last known good set/);
    const firstFailure = await d2.waitForLog(/^sync failed/);
    expect(d2.logs.indexOf(restored)).toBeLessThan(d2.logs.indexOf(firstFailure));
    expect(entriesOf(readFileSync(cfg.rules, 'utf8'))).toEqual(applied);
  });

  it('restart without network with local overrides: an allow in force holds from the restore, a local block no longer in force is not restored', async () => {
    const { cfg, applied } = await syncedOnceAndStopped();
    const victim = applied[0]!;
    // No daemon: the allow is stored and applied here (the record loses the victim).
    const allow = await runCli(['allow', victim.replace(/\/32$/, ''), '--config', cfg.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    // The record as an earlier apply could have left it: the victim still in, and a local block
    // whose override has since gone (written as one line of JSON, as an older agent wrote it).
    const recordPath = join(cfg.dir, 'state', 'applied-dry-run.json');
    const record = JSON.parse(readFileSync(recordPath, 'utf8')) as { entries: Array<{ cidr: string; reason: string; expiresAt: number | null }> };
    record.entries.push({ cidr: victim, reason: 'score', expiresAt: null }, { cidr: '192.0.2.99/32', reason: 'local', expiresAt: null });
    writeFileSync(recordPath, JSON.stringify(record));
    const d2 = restartOffline(cfg);
    await d2.waitForLog(/restored the last known good set/);
    const restored = entriesOf(readFileSync(cfg.rules, 'utf8'));
    expect(restored).not.toContain(victim);
    expect(restored.some((e) => e?.startsWith('192.0.2.99'))).toBe(false);
    expect(restored).toEqual(applied.filter((e) => e !== victim));
  });

  it('restart without network and no local override in force: a local block left in the record is not restored, the rest is', async () => {
    const { cfg, applied } = await syncedOnceAndStopped();
    const recordPath = join(cfg.dir, 'state', 'applied-dry-run.json');
    // Appended as the agent writes its lines: the last entry line gains a comma, the new one none.
    const text = readFileSync(recordPath, 'utf8');
    writeFileSync(recordPath, text.replace(/\}\n\]\}\n$/, '},\n{"cidr":"192.0.2.99/32","reason":"local","expiresAt":null}\n]}\n'));
    expect(readFileSync(recordPath, 'utf8')).toContain('192.0.2.99');
    const d2 = restartOffline(cfg);
    await d2.waitForLog(/restored the last known good set/);
    expect(entriesOf(readFileSync(cfg.rules, 'utf8'))).toEqual(applied);
  });

  it('kill -9 while a request is held open, lock file kept, then restart: the lock is not a holder, state parses, a cycle completes', async () => {
    // request_timeout_ms long enough that the held request is still open when the kill comes.
    const cfg = setup({ request_timeout_ms: 60_000 });
    const lock = join(cfg.dir, 'state', 'agent.lock');
    const first = start(cfg.path);
    await first.waitForLog(/^cycle done/);
    sim.setFault('slow', { routes: ['GET /ips'], delayMs: 60_000 });
    const held = sim.requests.length;
    // The next cycle is inside its pull: the lock is held and a feed request waits for its answer.
    await waitFor(() => existsSync(lock) && sim.requests.slice(held).some((r) => r.path.endsWith('/ips') && r.status === 0), 'a feed request held open');
    first.signal('SIGKILL');
    await first.exit();
    expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(first.pid); // the crash leaves the lock behind
    sim.setFault(null);
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    expect(d.count(/cycle skipped/)).toBe(0);
    expect(d.count(/set aside/)).toBe(0);
    expect(JSON.parse(readFileSync(join(cfg.dir, 'state', 'state.json'), 'utf8')).lastCycle.ok).toBe(true);
    expect(appliedIn(cfg.dir).length).toBeGreaterThan(0);
  });

  it('a corrupt state file is set aside with a warning, not a crash loop', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    expect(await d.stop()).toBe(0);
    writeFileSync(join(cfg.dir, 'state', 'state.json'), '{"cursor": 12, "lastCy');
    writeFileSync(join(cfg.dir, 'state', 'applied-dry-run.json'), '\u0000\u0001garbage');
    const d2 = start(cfg.path);
    // Both files, each set aside under its own name, then a normal cycle.
    await d2.waitForLog(/set aside/, 2);
    await d2.waitForLog(/^cycle done/);
    const aside = d2.logs.filter((l) => /set aside/.test(l.msg)).map((l) => String(l.file).split('/').pop()).sort();
    expect(aside).toEqual(['applied-dry-run.json', 'state.json']);
    const names = readdirSync(join(cfg.dir, 'state'));
    for (const f of aside) expect(names.some((n) => n.startsWith(`${f}.corrupt-`)), f).toBe(true);
  });

  it('a deleted agent record: keeps enforcing, never re-creates the record', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const good = appliedIn(cfg.dir);
    sim.deleteAgent(sim.agid);
    try {
      await d.waitForLog(/agent record not found/);
      // From the moment it learnt of the deletion, it sends no report at all.
      const mark = sim.requests.length;
      await d.waitForLog(/agent record not found/, 3);
      expect(sim.requests.slice(mark).filter((q) => q.method === 'POST' && q.path.endsWith('/feedback'))).toEqual([]);
      expect(d.count(/^not reporting: the server has no record for this agent/)).toBeGreaterThanOrEqual(2);
      expect(sim.getAgent(sim.agid)).toBeUndefined();
      expectKept(good, appliedIn(cfg.dir));
    } finally {
      sim.setAgentConfig(sim.agid, { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true', version: '0.1.0' });
    }
  });
});
