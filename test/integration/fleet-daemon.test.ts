// A good citizen of a fleet, seen from the API: what an idle decision poll costs (bytes counted
// at the simulator), a decision posted while the daemon runs reaching the firewall within the poll
// interval, a withdrawal at the next cycle, the start-up delay, conditional requests (304) and
// compression where the server offers it.
// The dry-run backend's rules file is the firewall here, as in daemon.test.ts.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type CallEntry, type Simulator } from '../simulator/index.js';
import { dryRunEntries, fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

let sim: Simulator;
const running: DaemonProcess[] = [];
/** When the last of the setup's decisions was posted (epoch ms). */
let decidedAt = 0;

beforeAll(async () => {
  // The fleet host: 10,000 indicators, 1,000 manual blocks, 200 whitelisted.
  sim = await startSimulator({ indicators: 10_000, seed: 28, agentConfig: { maximum_rules: '10000', score_threshold: '3', sync_time: '5', running: 'true' } });
  for (let i = 0; i < 1000; i++) sim.setDecision(`198.51.${100 + (i >> 8)}.${i & 255}`, 1);
  for (let i = 0; i < 200; i++) sim.setDecision(`203.0.113.${i}`, 0);
  decidedAt = Date.now();
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  sim.setConditional(null);
  sim.setNotModifiedQuirk(null);
  sim.setCompression(false);
  await Promise.all(running.splice(0).map((d) => d.stop()));
});

function start(path: string, env: Record<string, string> = {}): DaemonProcess {
  // Real minutes: sync_time 5 means no scheduled cycle during a test.
  const d = new DaemonProcess(path, { WCF_AGENT_MINUTE_MS: '60000', ...env });
  running.push(d);
  return d;
}

const firewall = dryRunEntries;

const decisionPolls = (calls: readonly CallEntry[]) => calls.filter((c) => c.method === 'GET' && c.path.endsWith('/ips') && (c.query.filter === '2' || c.query.filter === '3'));

/** POST /ips as an operator's console would: a decision of 1 (block), 0 (whitelist) or -1 (withdraw). */
async function decide(ip: string, decision: -1 | 0 | 1): Promise<void> {
  const res = await fetch(`${sim.url}/ips`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
    // Confidence 0.1: score 1, below the threshold, so only the decision can block it.
    body: JSON.stringify({ ip, confidence: 0.1, decision }),
  });
  expect(res.status).toBe(200);
}

/** Wait until the simulator has answered `n` more decision polls than it had when called. */
async function pollsAnswered(n: number): Promise<void> {
  const from = decisionPolls(sim.calls).length;
  await waitFor(() => decisionPolls(sim.calls).length >= from + 2 * n, `${n} decision polls`, 20_000);
}

/** The server's clock has moved past the setup's decisions, so polls ask only for newer records. */
async function settled(): Promise<void> {
  await waitFor(() => Date.now() > decidedAt + 3000, 'the server clock past the setup decisions', 5000, 100);
}

describe('decision polls between cycles', () => {
  it('a poll that finds nothing new costs at most 4 KB, both decision feeds together, counted at the server', async () => {
    const c = fastFailConfig(sim, { decision_poll_seconds: 1 });
    const d = start(c.path);
    await d.waitForLog(/^cycle done/);
    await settled();
    await pollsAnswered(1);
    sim.clearRequests();
    await pollsAnswered(4);
    const polls = decisionPolls(sim.calls);
    const bytes = polls.reduce((n, p) => n + p.bytesIn + p.bytesOut, 0);
    const perPoll = bytes / (polls.length / 2);
    expect(perPoll).toBeLessThanOrEqual(4096);
    // Each call a page header and nothing else: no record of the 1,200 decisions came again.
    for (const p of polls) expect(p.bytesIn + p.bytesOut, JSON.stringify(p)).toBeLessThan(2048);
    expect(d.count(/^cycle done/)).toBe(1);
  });

  it('a block posted through POST /ips while the daemon runs is in the firewall within the poll interval; a withdrawal leaves at the next cycle', async () => {
    const c = fastFailConfig(sim, { decision_poll_seconds: 2 });
    const d = start(c.path);
    await d.waitForLog(/^cycle done/);
    await settled();
    const ip = '192.0.2.77';
    expect(firewall(c.rules)).not.toContain(ip);

    const t0 = Date.now();
    await decide(ip, 1);
    // The poll interval, plus the time to apply.
    await waitFor(() => firewall(c.rules).includes(ip), `${ip} in the firewall`, 2000 + 1500, 20);
    expect(Date.now() - t0).toBeLessThan(3500);
    expect(d.count(/^cycle done/)).toBe(1);

    await decide(ip, -1);
    await pollsAnswered(2);
    // The polls ask for newer records; a withdrawn decision is in neither feed: still applied.
    expect(firewall(c.rules)).toContain(ip);
    d.signal('SIGHUP'); // the next cycle, at once
    await d.waitForLog(/^cycle done/, 2);
    expect(firewall(c.rules)).not.toContain(ip);
  });
});

describe('start-up delay', () => {
  it('with a successful sync younger than sync_time, the first sync waits (the restored set protects meanwhile); SIGHUP syncs at once', async () => {
    const c = fastFailConfig(sim, { decision_poll_seconds: 0, startup_delay_seconds: 4 });
    const first = start(c.path);
    await first.waitForLog(/^cycle done/);
    expect(first.count(/^first sync in/)).toBe(0); // no sync before: at once
    const applied = firewall(c.rules).length;
    await first.stop();

    const again = start(c.path);
    const restored = await again.waitForLog(/^restored the last known good set/);
    const waiting = await again.waitForLog(/^first sync in \d+ s/);
    const delayMs = waiting.delayMs as number;
    expect(delayMs).toBeGreaterThanOrEqual(0);
    expect(delayMs).toBeLessThanOrEqual(4000);
    expect(restored.entries).toBe(applied);
    const done = await again.waitForLog(/^cycle done/);
    expect((done.time as number) - (waiting.time as number)).toBeGreaterThanOrEqual(delayMs - 50);
    await again.stop();

    // A delay longer than the test: SIGHUP runs the sync at once all the same.
    const c2 = fastFailConfig(sim, { decision_poll_seconds: 0, startup_delay_seconds: 3600 });
    const one = start(c2.path);
    await one.waitForLog(/^cycle done/);
    await one.stop();
    const two = start(c2.path);
    await two.waitForLog(/^first sync in/);
    const hup = Date.now();
    two.signal('SIGHUP');
    await two.waitForLog(/^cycle done/);
    expect(Date.now() - hup).toBeLessThan(10_000);
  });

  it('without a recent successful sync the first sync runs at once, and sync --once never waits', async () => {
    const c = fastFailConfig(sim, { decision_poll_seconds: 0, startup_delay_seconds: 3600 });
    const once = await runCli(['sync', '--once', '--config', c.path]);
    expect(once.exitCode, once.stderr).toBe(0);
    // 100 ms minutes: sync_time (5) is half a second; the daemon starts once that sync is older.
    const syncedAt = Date.now();
    await waitFor(() => Date.now() > syncedAt + 1100, 'the last sync older than sync_time', 2000, 50);
    const d = start(c.path, { WCF_AGENT_MINUTE_MS: '100' });
    await d.waitForLog(/^cycle done/);
    expect(d.count(/^first sync in/)).toBe(0);
  });
});

describe('conditional requests', () => {
  it.each(['etag', 'last-modified'] as const)(
    "with %s from the server, the polls' unchanged decision feeds answer 304 with no body; the cycles' full pulls ask without validators; a new decision still comes through",
    async (mode) => {
      sim.setConditional(mode);
      const c = fastFailConfig(sim, { decision_poll_seconds: 1 });
      // Seconds for minutes: a cycle every 5 s (sync_time 5) between the polls, on one API client.
      const d = start(c.path, { WCF_AGENT_MINUTE_MS: '1000' });
      await d.waitForLog(/^cycle done/);
      await settled();
      await pollsAnswered(2); // the polls' start has moved past the newest decision: the same URL from now on
      const before = firewall(c.rules).sort();
      sim.clearRequests();
      await d.waitForLog(/^cycle done/, 2);
      await pollsAnswered(2);
      const calls = decisionPolls(sim.calls);
      const seen = JSON.stringify(calls.map((x) => [x.query.filter, x.query.ts, x.validators, x.status]));
      // A cycle's full pulls (from ts 0, and their later pages) send no validator: a cache in
      // front of the API may hold a wrong answer, and a cycle never takes a kept one.
      const full = calls.filter((p) => p.query.ts === '0');
      expect(full.length).toBeGreaterThanOrEqual(2);
      for (const p of full) expect([p.validators, p.status], seen).toEqual([false, 200]);
      // The polls between send them, and the unchanged feeds answer 304 with no body.
      const polls = calls.filter((p) => p.validators);
      expect(polls.length).toBeGreaterThanOrEqual(4);
      for (const p of polls) expect(p.status, seen).toBe(304);
      for (const p of polls) expect(p.bytesOut).toBeLessThan(400);
      expect(firewall(c.rules).sort()).toEqual(before);

      const ip = mode === 'etag' ? '192.0.2.88' : '192.0.2.89';
      await decide(ip, 1);
      await waitFor(() => firewall(c.rules).includes(ip), `${ip} in the firewall`, 1000 + 1500, 20);
    },
  );

  it('304s labelled Content-Encoding: gzip are "unchanged" like any other 304: the polls go on, a new decision comes through', async () => {
    sim.setConditional('etag');
    sim.setNotModifiedQuirk('gzip-label');
    const c = fastFailConfig(sim, { decision_poll_seconds: 1 });
    const d = start(c.path);
    await d.waitForLog(/^cycle done/);
    await settled();
    await pollsAnswered(1);
    sim.clearRequests();
    await pollsAnswered(2);
    // Those that sent a validator (a poll whose start has just moved asks a new URL, and has none to send).
    const polls = decisionPolls(sim.calls).filter((p) => p.validators);
    expect(polls.length).toBeGreaterThanOrEqual(2);
    for (const p of polls) expect(p.status, JSON.stringify(polls.map((x) => [x.query.filter, x.status]))).toBe(304);
    // The whitelist's poll answers 304 as before; the manual blocks' brings the new record. Both must be read for the poll to apply it.
    await decide('192.0.2.87', 1);
    await waitFor(() => firewall(c.rules).includes('192.0.2.87'), '192.0.2.87 in the firewall', 1000 + 1500, 20);
  });
});

describe('compression', () => {
  it('a server that compresses: a cycle costs several times fewer bytes, the firewall and the stored report are the same', async () => {
    const cycleBytes = async (): Promise<{ bytes: number; rules: string[]; blacklist: string[]; reportBytes: number }> => {
      const c = fastFailConfig(sim);
      sim.clearRequests();
      const r = await runCli(['sync', '--once', '--config', c.path]);
      expect(r.exitCode, r.stderr).toBe(0);
      const report = sim.calls.find((x) => x.method === 'POST' && x.path.endsWith('/feedback'))!;
      return { bytes: sim.calls.reduce((n, x) => n + x.bytesIn + x.bytesOut, 0), rules: firewall(c.rules).sort(), blacklist: [...(sim.getAgent(sim.agid)?.blacklist ?? [])].sort(), reportBytes: report.bytesIn };
    };
    const plain = await cycleBytes();
    sim.setCompression(true);
    const zipped = await cycleBytes();
    expect(zipped.rules).toEqual(plain.rules);
    expect(zipped.rules.length).toBeGreaterThan(1000);
    // The same entries (their order follows scores that decay between the two syncs).
    expect(zipped.blacklist).toEqual(plain.blacklist);
    expect(zipped.blacklist).toHaveLength(zipped.rules.length);
    expect(zipped.bytes * 3).toBeLessThan(plain.bytes);
    // The report too: the agent-record answer before it said the server takes gzip bodies.
    expect(zipped.reportBytes * 3).toBeLessThan(plain.reportBytes);
  });
});
