// The manual-decision feeds through the real daemon (and `sync --once`) and the real simulator over
// loopback, where a cache or a clock could freeze them or run them backwards: a cache whose ETag
// never changes, a record stamped in the future, and two feeds answered a moment apart while an
// address moves from one to the other. The dry-run backend's rules file is the firewall here.
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type CallEntry, type Simulator } from '../simulator/index.js';
import { dryRunEntries, fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

const sims: Simulator[] = [];
const running: DaemonProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await Promise.all(sims.splice(0).map((s) => s.close()));
});

async function simulator(o: Parameters<typeof startSimulator>[0]): Promise<Simulator> {
  const sim = await startSimulator({ indicators: 1000, seed: 34, agentConfig: { maximum_rules: '5000', score_threshold: '3', sync_time: '5', running: 'true' }, ...o });
  sims.push(sim);
  return sim;
}

/** `minuteMs`: 60000 keeps the next cycle 5 real minutes away (sync_time 5); 1000 makes it 5 s. */
function start(path: string, minuteMs: number): DaemonProcess {
  const d = new DaemonProcess(path, { WCF_AGENT_MINUTE_MS: String(minuteMs) });
  running.push(d);
  return d;
}

const firewall = dryRunEntries;

const decisionCalls = (calls: readonly CallEntry[]) => calls.filter((c) => c.method === 'GET' && c.path.endsWith('/ips') && (c.query.filter === '2' || c.query.filter === '3'));

/** Wait until the simulator has answered `n` more decision polls (both feeds) than it had when called. */
async function pollsAnswered(sim: Simulator, n: number): Promise<void> {
  const polls = () => decisionCalls(sim.calls).filter((c) => c.query.ts !== '0').length;
  const from = polls();
  await waitFor(() => polls() >= from + 2 * n, `${n} decision polls`, 20_000);
}

describe('behind a cache whose ETag never changes', () => {
  it('each cycle pulls both decision feeds without validators: a new block arrives and a withdrawn one leaves at the next cycle; the polls between still send them', async () => {
    const sim = await simulator({ conditional: 'fixed-etag' });
    const withdrawn = '192.0.2.40';
    const added = '192.0.2.41';
    sim.setDecision(withdrawn, 1);
    const c = fastFailConfig(sim, { decision_poll_seconds: 1 });
    const d = start(c.path, 1000); // a cycle every 5 s
    await d.waitForLog(/^cycle done/);
    expect(firewall(c.rules)).toContain(withdrawn);
    await d.waitForLog(/^cycle done/, 2); // the cache has now answered both full pulls once and kept its tags
    sim.setDecision(withdrawn, -1);
    sim.setDecision(added, 1);
    sim.clearRequests();
    const cycles = d.count(/^cycle done/);
    await d.waitForLog(/^cycle done/, cycles + 2);
    expect(firewall(c.rules)).toContain(added);
    expect(firewall(c.rules)).not.toContain(withdrawn);
    const calls = decisionCalls(sim.calls);
    const full = calls.filter((x) => x.query.ts === '0');
    expect(full.length).toBeGreaterThanOrEqual(4);
    for (const x of full) expect([x.validators, x.status], JSON.stringify(full.map((y) => [y.query.filter, y.validators, y.status]))).toEqual([false, 200]);
    // Between cycles the polls send the kept tag, and this cache answers 304 to it.
    expect(calls.filter((x) => x.validators && x.status === 304).length).toBeGreaterThan(0);
  });
});

describe('a manual record stamped in the future', () => {
  it('does not move the polls past the server clock: a block posted now is applied by the next polls', async () => {
    const sim = await simulator({});
    const c = fastFailConfig(sim, { decision_poll_seconds: 1 });
    const d = start(c.path, 60_000); // no cycle during the test: only polls bring decisions
    await d.waitForLog(/^cycle done/);
    const ahead = '192.0.2.50';
    sim.setDecision(ahead, 1);
    // 550 s ahead: inside the 600 s the agent allows for clock skew, so the record counts.
    sim.upsertIndicator({ ip: ahead, ts: sim.clock.now() + 550 });
    await waitFor(() => firewall(c.rules).includes(ahead), `${ahead} in the firewall`, 10_000, 20);
    await pollsAnswered(sim, 1);

    const now = '192.0.2.51';
    sim.setDecision(now, 1);
    const posted = sim.clock.now();
    await waitFor(() => firewall(c.rules).includes(now), `${now} in the firewall`, 10_000, 20);
    expect(d.count(/^cycle done/)).toBe(1);
    // No poll asked from beyond the server's clock.
    for (const x of decisionCalls(sim.calls)) expect(Number(x.query.ts), JSON.stringify(x)).toBeLessThanOrEqual(posted + 10);
  });
});

describe('the newest record of an address wins across both decision feeds', () => {
  /**
   * A simulator whose clock stands still at T (so the polls keep asking from the newest
   * record, inclusive), with `ip` whitelisted at T; the test moves the clock by hand.
   */
  async function whitelistedAtT(ip: string): Promise<Simulator> {
    const sim = await simulator({ now: Math.floor(Date.now() / 1000) });
    sim.setDecision(ip, 0);
    return sim;
  }

  /** Hold the next manual-blocks answer back (it is written once the hold ends, with the feed as it is then). */
  function holdNextManualAnswer(sim: Simulator): void {
    sim.clearRequests();
    sim.setFault('slow', { filter: 2, count: 1, delayMs: 1500 });
  }

  /** Once the whitelist has answered while the manual blocks' answer is held, block `ip` one second after T. */
  async function blockWhileHeld(sim: Simulator, ip: string): Promise<void> {
    const held = () => sim.requests.some((r) => r.query.filter === '2' && r.status === 0) && sim.requests.some((r) => r.query.filter === '3' && r.status === 200);
    await waitFor(held, 'a manual-blocks request held while the whitelist answered', 20_000, 5);
    sim.clock.advance(1);
    sim.setDecision(ip, 1);
  }

  it('a poll: the whitelist answer still says "whitelisted at T", the manual answer "blocked at T+1": blocked', async () => {
    const ip = '192.0.2.60';
    const sim = await whitelistedAtT(ip);
    // A request timeout longer than the hold.
    const c = fastFailConfig(sim, { decision_poll_seconds: 1, request_timeout_ms: 5000 });
    const d = start(c.path, 60_000);
    await d.waitForLog(/^cycle done/);
    await pollsAnswered(sim, 1);
    expect(firewall(c.rules)).not.toContain(ip);
    const applied = d.count(/^manual decisions changed/);
    // Right after a poll: the next one, a second away, is the one held.
    holdNextManualAnswer(sim);
    await blockWhileHeld(sim, ip);
    await d.waitForLog(/^manual decisions changed/, applied + 1);
    expect(firewall(c.rules)).toContain(ip);
    await pollsAnswered(sim, 2);
    expect(firewall(c.rules)).toContain(ip);
  });

  it('a cycle (sync --once): the same, in its full pulls', async () => {
    const ip = '192.0.2.61';
    const sim = await whitelistedAtT(ip);
    const c = fastFailConfig(sim, { decision_poll_seconds: 0, request_timeout_ms: 5000 });
    holdNextManualAnswer(sim);
    const sync = runCli(['sync', '--once', '--config', c.path]);
    await blockWhileHeld(sim, ip);
    const r = await sync;
    expect(r.exitCode, r.stderr).toBe(0);
    expect(firewall(c.rules)).toContain(ip);
  });
});
