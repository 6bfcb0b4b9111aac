import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { ADDR, createLab, isRoot, type Lab } from '../../netns/netns.js';
import { kernelSet } from '../../netns/relay.js';

/**
 * Local overrides and decision polling as an operator sees them, on real
 * netfilter in a test namespace (config `netns`), with the built CLI and the
 * daemon as child processes. Root required.
 */
const PLUGIN = 'nftables';
/** The contract: an override is in the kernel when the command returns (the daemon answers after its apply). */

let sim: Simulator;
let lab: Lab;
const dirs: string[] = [];
let lastConfig: string | undefined;
const daemons: DaemonProcess[] = [];

beforeAll(async () => {
  if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
  // sync_time 5 minutes at real speed: nothing here may wait for a cycle.
  sim = await startSimulator({ indicators: 100, seed: 31, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '5', running: 'true' } });
  lab = await createLab();
});
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  for (const ip of [ADDR.blocked, ADDR.inNet, ADDR.other, ADDR.allowed]) sim.setDecision(ip, -1);
  // Each test starts from a kernel without the agent's objects.
  if (lastConfig) expect((await runCli(['flush', '--config', lastConfig])).exitCode).toBe(0);
  lastConfig = undefined;
});
afterAll(async () => {
  await lab?.destroy();
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function config(extra: Record<string, unknown> = {}) {
  const c = writeConfig({
    agid: sim.agid,
    base_url: sim.url,
    token: sim.token,
    plugin: PLUGIN,
    netns: lab.host.name,
    retries: 0,
    jitter_seconds: 0,
    connect_timeout_ms: 500,
    request_timeout_ms: 2000,
    decision_poll_seconds: 1,
    ...extra,
  });
  dirs.push(c.dir);
  lastConfig = c.path;
  return c;
}

function startDaemon(path: string): DaemonProcess {
  const d = new DaemonProcess(path, { WCF_AGENT_MINUTE_MS: '60000' });
  daemons.push(d);
  return d;
}

const kernel = () => kernelSet(lab.host, PLUGIN);

/** Poll the kernel until `check` holds, at most until `deadline` (epoch ms). */
async function kernelUntil(check: (set: string[]) => boolean, what: string, deadline: number): Promise<void> {
  await waitFor(async () => check(await kernel()), what, Math.max(0, deadline - Date.now()), 20);
}

describe('local overrides on real netfilter', () => {
  it('allow with the daemon running takes a manually blocked address out of the kernel before the command returns, and holds across a restart', async () => {
    const c = config();
    sim.setDecision(ADDR.blocked, 1);
    const d = startDaemon(c.path);
    await d.waitForLog(/^cycle done/);
    expect(await kernel()).toContain(ADDR.blocked);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');

    const r = await runCli(['allow', ADDR.blocked, '--for', '2h', '--note', 'our partner', '--config', c.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^allowed ${ADDR.blocked.replace(/\./g, '\\.')} for 2h 00m \\(until .*\\): applied by the daemon \\(pid ${d.pid}\\)`));
    expect(await kernel(), 'out of the kernel when the command returns').not.toContain(ADDR.blocked);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');

    const list = JSON.parse((await runCli(['overrides', '--json', '--config', c.path])).stdout) as { overrides: Record<string, unknown>[] };
    expect(list.overrides).toEqual([{ address: ADDR.blocked, action: 'allow', created: expect.any(Number), expires: expect.any(Number), expires_in: expect.any(Number), note: 'our partner' }]);
    expect(list.overrides[0]!.expires_in as number).toBeGreaterThan(7100);

    // A restart: the restore and the first cycle both leave it out (the manual block is still on the server).
    expect(await d.stop()).toBe(0);
    const again = startDaemon(c.path);
    await again.waitForLog(/^restored the last known good set/);
    expect(await kernel()).not.toContain(ADDR.blocked);
    await again.waitForLog(/^cycle done/);
    expect(await kernel()).not.toContain(ADDR.blocked);

    // Removed: blocked again at once, without waiting for a cycle.
    const rm = await runCli(['overrides', 'remove', ADDR.blocked, '--config', c.path]);
    expect(rm.exitCode, rm.stderr).toBe(0);
    expect(rm.stdout).toContain(`removed the local override for ${ADDR.blocked}: applied by the daemon (pid ${again.pid})`);
    expect(await kernel(), 'blocked again when the command returns').toContain(ADDR.blocked);
    expect((await runCli(['overrides', '--config', c.path])).stdout).toBe('no local overrides');
    expect(again.count(/^cycle done/)).toBe(1);
  });

  it('block --for 8s with the daemon running is in the kernel when the command returns and leaves it on its own', { timeout: 120_000 }, async () => {
    const c = config();
    const d = startDaemon(c.path);
    await d.waitForLog(/^cycle done/);
    const r = await runCli(['block', ADDR.other, '--for', '8s', '--config', c.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await kernel(), 'in the kernel when the command returns').toContain(ADDR.other);
    // The kernel's own timeout removes it: no cycle runs meanwhile (sync_time is 5 minutes).
    await kernelUntil((s) => !s.includes(ADDR.other), `${ADDR.other} to expire`, Date.now() + 20_000);
    expect(await lab.connect(ADDR.other)).toBe('connected');
    expect(d.count(/^cycle done/)).toBe(1);
    expect((await runCli(['overrides', '--config', c.path])).stdout).toBe('no local overrides');
  });

  it('allow --for 8s ends on its own: the daemon blocks the address again when it expires, without a cycle', { timeout: 120_000 }, async () => {
    const c = config({ decision_poll_seconds: 0 });
    sim.setDecision(ADDR.blocked, 1);
    const d = startDaemon(c.path);
    await d.waitForLog(/^cycle done/);
    expect((await runCli(['allow', ADDR.blocked, '--for', '8s', '--config', c.path])).exitCode).toBe(0);
    expect(await kernel(), 'out of the kernel when the command returns').not.toContain(ADDR.blocked);
    await kernelUntil((s) => s.includes(ADDR.blocked), `${ADDR.blocked} to be blocked again after the allow`, Date.now() + 20_000);
    await d.waitForLog(/^a local allow ended: applied without a full cycle/);
    expect(d.count(/^cycle done/)).toBe(1);
  });

  it('without a daemon, allow and block apply themselves under the lock', async () => {
    const c = config();
    sim.setDecision(ADDR.blocked, 1);
    const sync = await runCli(['sync', '--config', c.path]);
    expect(sync.exitCode, sync.stderr).toBe(0);
    expect(await kernel()).toContain(ADDR.blocked);

    const allow = await runCli(['allow', ADDR.blocked, '--config', c.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    expect(allow.stdout).toMatch(/: applied \(no daemon running\): \d+ entries on nftables$/);
    expect(await kernel()).not.toContain(ADDR.blocked);

    const block = await runCli(['block', ADDR.inNet, '--for', '2s', '--config', c.path]);
    expect(block.exitCode, block.stderr).toBe(0);
    expect(await kernel()).toContain(ADDR.inNet);
    await kernelUntil((s) => !s.includes(ADDR.inNet), `${ADDR.inNet} to expire`, Date.now() + 10_000);

    // plan shows the local block with its reason; a later sync keeps honouring the allow.
    expect((await runCli(['block', ADDR.other, '--config', c.path])).exitCode).toBe(0);
    const plan = JSON.parse((await runCli(['plan', '--json', '--config', c.path])).stdout) as { entries: { ip: string; reason: string }[] };
    expect(plan.entries.find((e) => e.ip === ADDR.other)?.reason).toBe('local');
    expect(plan.entries.some((e) => e.ip === ADDR.blocked)).toBe(false);
    expect((await runCli(['sync', '--config', c.path])).exitCode).toBe(0);
    expect(await kernel()).not.toContain(ADDR.blocked);
  });

  it('block of a protected address is refused naming the protected member, and stores nothing', async () => {
    const c = config();
    const r = await runCli(['block', ADDR.host, '--config', c.path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(`wcf-agent: WCF_ERR_USAGE: ADDRESS: not blocked: ${ADDR.host} is protected (own_address ${ADDR.host}, netns ${lab.host.name}): the agent never blocks it`);
    const wide = await runCli(['block', '10.0.0.0/6', '--config', c.path]);
    expect(wide.exitCode).toBe(2);
    expect(wide.stderr).toContain('ADDRESS: not blocked: 8.0.0.0/6 is wider than min_prefix /8');
    expect(existsSync(join(c.dir, 'state', 'overrides.json'))).toBe(false);
    const gone = await runCli(['overrides', 'remove', ADDR.other, '--config', c.path]);
    expect(gone.exitCode).toBe(2);
    expect(gone.stderr).toContain(`ADDRESS: no local override for ${ADDR.other}`);
  });
});

describe('decision polling', () => {
  it('a manual block added on the server reaches the kernel long before sync_time without a cycle; its withdrawal at the next cycle', async () => {
    const c = config();
    const d = startDaemon(c.path);
    await d.waitForLog(/^cycle done/);
    expect(await kernel()).not.toContain(ADDR.inNet);

    sim.setDecision(ADDR.inNet, 1);
    // Polled every second; sync_time is 5 minutes.
    await kernelUntil((s) => s.includes(ADDR.inNet), 'the manual block in the kernel', Date.now() + 10_000);
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
    await d.waitForLog(/^manual decisions changed: applied without a full cycle/);

    // A local allow still beats a server decision that arrives later.
    expect((await runCli(['allow', ADDR.blocked, '--config', c.path])).exitCode).toBe(0);
    sim.setDecision(ADDR.blocked, 1);
    await d.waitForLog(/^manual decisions changed/, 2);
    expect(await kernel()).not.toContain(ADDR.blocked);

    // A withdrawal leaves the decision feed rather than coming back newer: polls asking for newer
    // records cannot see it, the next cycle's full pull does (here at once: SIGHUP).
    sim.setDecision(ADDR.inNet, -1);
    expect(d.count(/^cycle done/)).toBe(1);
    d.signal('SIGHUP');
    await d.waitForLog(/^cycle done/, 2);
    await kernelUntil((s) => !s.includes(ADDR.inNet), 'the withdrawn block to leave', Date.now() + 10_000);
  });
});
