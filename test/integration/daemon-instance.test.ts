import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { ADDR, isRoot, Netns } from '../netns/netns.js';
import { kernelSet } from '../netns/relay.js';

/**
 * One daemon per state dir: a second `run` is refused at once (exit 4, naming the first),
 * from this PID namespace or another (a container on the host's state path), and the
 * first keeps working; a SIGKILLed daemon's claim goes with it. Real daemons (the built
 * CLI), nftables in a test namespace, `unshare --pid --fork --mount-proc` for the other
 * PID namespace. Root required.
 */
const IN_NEW_PID_NS = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];

let sim: Simulator;
let ns: Netns;
const daemons: Daemon[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (!isRoot) throw new Error('these tests need root (network and PID namespaces)');
  sim = await startSimulator({ indicators: 50, seed: 41, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '5', running: 'true' } });
  ns = await Netns.create();
});
afterEach(async () => {
  // SIGKILL for a daemon behind unshare (which blocks SIGTERM; its --kill-child ends the daemon).
  await Promise.all(daemons.splice(0).map((d) => (d.prefixed ? (d.signal('SIGKILL'), d.exit()) : d.stop())));
  sim.setDecision(ADDR.blocked, -1);
  // Each test's agent has a state dir of its own: what one left is, to the next, another agent's table.
  await ns.exec('nft', ['flush', 'ruleset']);
});
afterAll(async () => {
  await ns?.destroy();
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function config(extra: Record<string, unknown> = {}) {
  const c = fastFailConfig(sim, { plugin: 'nftables', netns: ns.name, decision_poll_seconds: 0, ...extra });
  dirs.push(c.dir);
  return c;
}

type Daemon = DaemonProcess & { prefixed: boolean };
function start(path: string, prefix: string[] = []): Daemon {
  // sync_time 5 minutes at real speed: no scheduled cycle during a test.
  const d = Object.assign(new DaemonProcess(path, { WCF_AGENT_MINUTE_MS: '60000' }, prefix), { prefixed: prefix.length > 0 });
  daemons.push(d);
  return d;
}

/** How a second daemon ended: its exit code, or 'started' when it logged that it runs (stopped then, as an operator would). */
async function secondRun(path: string, prefix: string[] = []): Promise<{ outcome: number | null | 'started'; d: Daemon; ms: number }> {
  const started = Date.now();
  const d = start(path, prefix);
  let code: number | null | undefined;
  void d.exit().then((c) => (code = c));
  const outcome = await waitFor(() => (code !== undefined ? { code } : d.count(/daemon started/) > 0 ? { code: 'started' as const } : undefined), 'the second daemon to exit or start', 30_000);
  return { outcome: outcome.code, d, ms: Date.now() - started };
}

const statusJson = async (path: string, prefix: string[] = []) => {
  const r = await runCli(['status', '--json', '--config', path], {}, prefix);
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { daemon: { running: boolean; pid: number | null; other_pid_namespace: boolean | null }; enforcing: boolean };
};

describe('one daemon per state directory', () => {
  it('a second `run` exits 4 at once naming the first, touching nothing; the first keeps working (status, status --probe, allow, overrides remove)', async () => {
    const c = config();
    sim.setDecision(ADDR.blocked, 1);
    const first = start(c.path);
    await first.waitForLog(/^cycle done/);
    expect(await kernelSet(ns, 'nftables')).toContain(ADDR.blocked);

    const second = await secondRun(c.path);
    expect(second.outcome, second.d.raw.join('\n')).toBe(4);
    expect(second.ms).toBeLessThan(15_000);
    expect(second.d.raw.join('\n')).toContain(`another wcf-agent daemon (pid ${first.pid}) already serves ${c.state}`);
    expect(second.d.count(/restored the last known good set|daemon started/)).toBe(0);
    expect(existsSync(join(c.state, 'control.sock'))).toBe(true);
    expect(JSON.parse(readFileSync(join(c.state, 'daemon.pid'), 'utf8')).pid).toBe(first.pid);

    const status = await runCli(['status', '--config', c.path]);
    expect(status.stdout).toMatch(new RegExp(`^daemon +running, pid ${first.pid}, up `, 'm'));
    const probe = await runCli(['status', '--probe', '--config', c.path]);
    expect(probe.exitCode, probe.stdout).toBe(0);
    expect(probe.stdout).toMatch(/^ready: enforcing, /);

    const allow = await runCli(['allow', ADDR.blocked, '--config', c.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    expect(allow.stdout).toContain(`applied by the daemon (pid ${first.pid})`);
    expect(await kernelSet(ns, 'nftables')).not.toContain(ADDR.blocked);
    const removed = await runCli(['overrides', 'remove', ADDR.blocked, '--config', c.path]);
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(removed.stdout).toContain(`removed the local override for ${ADDR.blocked}: applied by the daemon (pid ${first.pid})`);
    expect(await kernelSet(ns, 'nftables')).toContain(ADDR.blocked);
    expect(first.count(/^cycle done/)).toBe(1); // the first daemon did it, between cycles
  });

  it('a daemon whose control socket could not be opened: allow stores the override and leaves it to the daemon, which applies it at its next cycle', async () => {
    const c = config();
    sim.setDecision(ADDR.blocked, 1);
    mkdirSync(c.state, { recursive: true, mode: 0o700 });
    writeFileSync(join(c.state, 'control.sock'), 'not a socket'); // the daemon opens no socket then
    const d = start(c.path);
    await d.waitForLog(/^cycle done/);
    expect(d.count(/not a socket/)).toBe(1);
    const allow = await runCli(['allow', ADDR.blocked, '--config', c.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    expect(allow.stdout).toContain(`stored; the daemon (pid ${d.pid}) does not answer on its control socket`);
    // Not applied beside the daemon (its watcher would take that for another tool's change).
    expect(await kernelSet(ns, 'nftables')).toContain(ADDR.blocked);
    d.signal('SIGHUP'); // a reload runs a cycle, which reads the overrides file
    await d.waitForLog(/^cycle done/, 2);
    expect(await kernelSet(ns, 'nftables')).not.toContain(ADDR.blocked);
    expect(d.count(/repair/)).toBe(0);
  });

  it('a second daemon in a new PID namespace is refused, naming the first and that it is in another PID namespace', async () => {
    const c = config();
    const first = start(c.path);
    await first.waitForLog(/^cycle done/);
    const second = await secondRun(c.path, IN_NEW_PID_NS);
    expect(second.outcome, second.d.raw.join('\n')).toBe(4);
    expect(second.d.raw.join('\n')).toMatch(new RegExp(`another wcf-agent daemon \\(pid ${first.pid} in another PID namespace: pid:\\[\\d+\\]\\) already serves`));
    expect(await statusJson(c.path)).toMatchObject({ daemon: { running: true, pid: first.pid, other_pid_namespace: false }, enforcing: true });
    // Seen from a new PID namespace too (where the first's PID means nothing).
    expect(await statusJson(c.path, IN_NEW_PID_NS)).toMatchObject({ daemon: { running: true, pid: first.pid, other_pid_namespace: true } });
  });

  it('a daemon in a new PID namespace (a container on this state dir): seen from here as running, a second `run` and `flush` from here refused', async () => {
    const c = config();
    const inner = start(c.path, IN_NEW_PID_NS);
    await inner.waitForLog(/^cycle done/);
    expect(await statusJson(c.path)).toMatchObject({ daemon: { running: true, pid: 1, other_pid_namespace: true }, enforcing: true });
    const status = await runCli(['status', '--config', c.path]);
    expect(status.stdout).toMatch(/^daemon +running, pid 1 in another PID namespace: pid:\[\d+\], up /m);
    const second = await secondRun(c.path);
    expect(second.outcome, second.d.raw.join('\n')).toBe(4);
    expect(second.d.raw.join('\n')).toMatch(/another wcf-agent daemon \(pid 1 in another PID namespace: pid:\[\d+\]\) already serves/);
    const entries = await kernelSet(ns, 'nftables');
    const flush = await runCli(['flush', '--config', c.path]);
    expect(flush.exitCode, flush.stderr).toBe(4);
    expect(flush.stderr).toMatch(/a wcf-agent daemon \(pid 1 in another PID namespace: pid:\[\d+\]\) serves/);
    expect(await kernelSet(ns, 'nftables')).toEqual(entries);
  });

  it('a SIGKILLed daemon (inside a cycle, holding both locks) leaves nothing that stops the next: it starts and syncs', async () => {
    const c = config({ request_timeout_ms: 60_000 });
    const first = start(c.path);
    await first.waitForLog(/^cycle done/);
    sim.setFault('slow', { routes: ['GET /feedback'], delayMs: 60_000 });
    try {
      first.signal('SIGHUP'); // a cycle now, held open by the slow answer
      await waitFor(async () => (await statusJson(c.path)).daemon.pid === first.pid && JSON.parse(readFileSync(join(c.state, 'agent.lock'), 'utf8') || '{}').pid === first.pid, 'the daemon inside a cycle');
      first.signal('SIGKILL');
      await first.exit();
    } finally {
      sim.setFault(null);
    }
    expect(JSON.parse(readFileSync(join(c.state, 'daemon.pid'), 'utf8')).pid).toBe(first.pid); // left behind, believed by nobody
    expect((await statusJson(c.path)).daemon).toMatchObject({ running: false, pid: null });
    const next = start(c.path);
    await next.waitForLog(/daemon started/);
    await next.waitForLog(/^cycle done/);
    expect(next.count(/cycle skipped/)).toBe(0);
    expect((await statusJson(c.path)).daemon).toMatchObject({ running: true, pid: next.pid });
  });
});
