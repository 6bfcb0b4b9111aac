import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { kernelEntries } from '../helpers/kernel.js';
import { ADDR, createLab, isRoot, type Lab } from '../netns/netns.js';

/**
 * The daemon holds its one-writer lock only while it writes the kernel, never across a pull:
 * with the API trickling the score feed (a slow link, a hostile server), another tool's
 * removal of the agent's table is repaired and `wcf-agent allow` / `block` reach the kernel
 * within seconds, while the pull is still in flight. The cycle that then finishes applies
 * its own selection with those overrides, on what the kernel holds after them.
 * Real nftables in a test namespace, the daemon and the CLI as child processes.
 */

const PLUGIN = 'nftables';
/** A repair or an override while a pull is in flight: within seconds (the watcher hears nft events at once). */
const AT_ONCE_MS = 5000;
/** The watcher's repair line, or the cycle's own re-assertion of missing objects. */
const REPAIRED = /put back with the last applied set|re-asserted the last applied set/;

let sim: Simulator;
let lab: Lab;
const daemons: DaemonProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
  sim = await startSimulator({ indicators: 400, seed: 47, agentConfig: { maximum_rules: '60', score_threshold: '3', sync_time: '5', running: 'true' } });
  lab = await createLab();
});
afterEach(async () => {
  if (process.env.WRITER_DEBUG) for (const d of daemons) console.log(d.raw.map((l) => l.slice(0, 400)).join('\n'));
  sim.setFault(null);
  sim.finishTrickles();
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  for (const ip of [ADDR.blocked, ADDR.other]) sim.setDecision(ip, -1);
  // Each test's agent has a state dir of its own: what one left is, to the next, another agent's table.
  await lab.host.exec('nft', ['flush', 'ruleset']);
});
afterAll(async () => {
  await lab?.destroy();
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const kernel = () => kernelEntries(lab.host, PLUGIN);
const applied = (stateDir: string) =>
  (JSON.parse(readFileSync(join(stateDir, `applied-${PLUGIN}.json`), 'utf8')) as { entries: { cidr: string }[] }).entries.map((e) => e.cidr.replace(/\/32$/, '')).sort();

describe('the daemon’s writer while a pull is in flight', () => {
  it('a deleted table is back and allow / block are in the kernel when the command returns; the cycle then keeps them', { timeout: 120_000 }, async () => {
    sim.setDecision(ADDR.blocked, 1); // a manual block: in every selection
    const cfg = fastFailConfig(sim, {
      plugin: PLUGIN,
      netns: lab.host.name,
      // Trickled pages are cut by nothing but the test: no overall request deadline, no minimum rate.
      request_deadline_ms: 600_000,
      min_bytes_per_second: 0,
      decision_poll_seconds: 0,
      // Every pull a full one: the trickled page is the whole feed, not an incremental handful.
      full_resync_hours: 0,
    });
    dirs.push(cfg.dir);
    // A minute of 200 ms: sync_time 5 puts the second cycle a second after the first.
    const d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '200' });
    daemons.push(d);
    await d.waitForLog(/^cycle done/);
    expect(await kernel()).toContain(ADDR.blocked);
    expect((await kernel()).length).toBeGreaterThan(20);

    // The next cycle's score-feed page arrives 64 bytes every 200 ms: minutes for the page.
    sim.setFault('trickle', { routes: ['GET /ips'], filter: 0, delayMs: 200, trickleBytes: 64 });
    await waitFor(() => sim.trickling > 0, 'a cycle pulling the trickled page', 20_000);
    const cycles = d.count(/^cycle done/);

    // Another tool removes the table: back within seconds, the pull still running. Twice: the
    // first removal may land before the cycle's own check for missing objects (it runs beside
    // the pull, once); the second is certainly after it, so only a repair between cycles helps.
    const before = await kernel();
    for (let i = 1; i <= 2; i++) {
      await lab.host.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
      await waitFor(async () => (await kernel()).join() === before.join(), `the table and its set back (removal ${i})`, AT_ONCE_MS);
      await d.waitForLog(REPAIRED, i);
      expect(sim.trickling, 'the pull is still in flight').toBeGreaterThan(0);
    }

    // allow and block: in the kernel when the command returns, the pull still running.
    const t0 = Date.now();
    const allow = await runCli(['allow', ADDR.blocked, '--config', cfg.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    expect(allow.stdout).toContain(`applied by the daemon (pid ${d.pid})`);
    expect(await kernel()).not.toContain(ADDR.blocked);
    const block = await runCli(['block', ADDR.other, '--config', cfg.path]);
    expect(block.exitCode, block.stderr).toBe(0);
    expect(block.stdout).toContain(`applied by the daemon (pid ${d.pid})`);
    expect(await kernel()).toContain(ADDR.other);
    expect(Date.now() - t0).toBeLessThan(2 * AT_ONCE_MS);
    expect(sim.trickling, 'the pull is still in flight').toBeGreaterThan(0);
    expect(d.count(/^cycle done/)).toBe(cycles);

    // The pull ends: the cycle applies its selection with both overrides in it.
    sim.setFault(null);
    sim.finishTrickles();
    await d.waitForLog(/^cycle done/, cycles + 1, 30_000);
    const after = await kernel();
    expect(after).not.toContain(ADDR.blocked);
    expect(after).toContain(ADDR.other);
    expect(after).toEqual(applied(cfg.state));
    expect(await d.stop()).toBe(0);
  });

  it('an allow that ends while its own apply still runs is still ended: the address is blocked again', { timeout: 120_000 }, async () => {
    // An `nft` first on PATH (ip netns exec looks it up there) that, while SLOW exists, takes
    // 3 s over each `nft -f` that writes (an apply): longer than the allow below lasts. Check-mode
    // runs (`nft -c -f`: the watcher's and the apply's quick probes) are not slowed: held 3 s
    // each, they would let the allow expire before its apply began, which is not the case tested.
    const shims = mkdtempSync(join(tmpdir(), 'wcf-shim-'));
    dirs.push(shims);
    const slow = join(shims, 'slow');
    const realNft = (await execa('sh', ['-c', 'command -v nft'])).stdout.trim();
    writeFileSync(join(shims, 'nft'), `#!/bin/sh\ncase " $* " in *" -c "*) ;; *" -f "*) if [ -e '${slow}' ]; then sleep 3; fi;; esac\nexec '${realNft}' "$@"\n`, { mode: 0o755 });
    sim.setDecision(ADDR.blocked, 1);
    const cfg = fastFailConfig(sim, { plugin: PLUGIN, netns: lab.host.name, decision_poll_seconds: 0 });
    dirs.push(cfg.dir);
    const d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000', PATH: `${shims}:${process.env.PATH ?? ''}` });
    daemons.push(d);
    await d.waitForLog(/^cycle done/);
    expect(await kernel()).toContain(ADDR.blocked);
    writeFileSync(slow, '');
    const allow = await runCli(['allow', ADDR.blocked, '--for', '2s', '--config', cfg.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    expect(await kernel(), 'allowed when the command returns').not.toContain(ADDR.blocked);
    rmSync(slow);
    // The allow ended before its apply did: the daemon must still put the address back, without a cycle.
    await waitFor(async () => (await kernel()).includes(ADDR.blocked), `${ADDR.blocked} blocked again after the allow`, 15_000);
    expect(d.count(/^cycle done/)).toBe(1);
  });

  it('running turned off: an allow while that cycle still reports does not bring the removed rules back', { timeout: 120_000 }, async () => {
    // A state report may wait a minute for its answer (the idle limit): the cycle is still on when the allow comes.
    const cfg = fastFailConfig(sim, { plugin: PLUGIN, netns: lab.host.name, request_timeout_ms: 60_000, request_deadline_ms: 600_000, decision_poll_seconds: 0 });
    dirs.push(cfg.dir);
    const d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '200' });
    daemons.push(d);
    try {
      await d.waitForLog(/^cycle done/);
      expect((await kernel()).length).toBeGreaterThan(20);
      // The next cycle removes the rules, then its state report hangs on the server.
      sim.setFault('slow', { routes: ['POST /feedback'], delayMs: 30_000 });
      sim.setAgentConfig(sim.agid, { running: 'false' });
      await d.waitForLog(/^running is disabled/);
      await waitFor(async () => (await kernel()).length === 0, 'the rules removed', AT_ONCE_MS);
      const allow = await runCli(['allow', ADDR.other, '--config', cfg.path]);
      expect(allow.exitCode, allow.stderr).toBe(0);
      expect(await kernel()).toEqual([]);
      expect(d.count(/^running is disabled in the stored configuration: local overrides are kept/)).toBe(1);
      expect(d.count(/^cycle done/), 'the cycle that turned it off is still reporting').toBe(1);
    } finally {
      sim.setFault(null);
      sim.setAgentConfig(sim.agid, { running: 'true' });
    }
  });
});
