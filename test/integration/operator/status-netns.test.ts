import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { createLab, isRoot, type Lab } from '../../netns/netns.js';
import { kernelEntries } from '../../helpers/kernel.js';

/**
 * `status` tells what the kernel holds and whether a daemon runs, not what
 * state.json last recorded: on real netfilter in a test namespace. Root required.
 */
interface StatusJson {
  enforcing: boolean | null;
  enforcing_reason: string;
  daemon: { running: boolean; pid: number | null; started_at: number | null; uptime_seconds: number | null };
  firewall: { plugin: string; objects: { what: string; state: string }[]; entries: number | null };
  applied: number;
  next_sync: number | null;
}

/** How each backend loses its hook, as firewalld or an admin's script would do it. */
const DELETE_HOOK = {
  nftables: { commands: [['nft', 'flush', 'chain', 'inet', 'wcf_agent', 'prerouting'], ['nft', 'delete', 'chain', 'inet', 'wcf_agent', 'prerouting']], missing: 'nft chain inet wcf_agent prerouting' },
  ipset: { commands: [['iptables', '-D', 'INPUT', '-m', 'comment', '--comment', 'wcf-agent', '-j', 'WCF-AGENT']], missing: 'iptables hook INPUT -> WCF-AGENT' },
} as const;

describe.each(['nftables', 'ipset'] as const)('status on real netfilter, %s backend', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let dir: string | undefined;
  let d: DaemonProcess | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 100, seed: 37, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '5', running: 'true' } });
    lab = await createLab();
  });
  afterAll(async () => {
    await d?.stop();
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const status = async (path: string): Promise<{ json: StatusJson; text: Record<string, string> }> => {
    const j = await runCli(['status', '--json', '--config', path]);
    expect(j.exitCode, j.stderr).toBe(0);
    const t = await runCli(['status', '--config', path]);
    const text = Object.fromEntries(t.stdout.split('\n').map((l) => [l.slice(0, 17).trim(), l.slice(17)]));
    return { json: JSON.parse(j.stdout) as StatusJson, text };
  };

  it('never "enforcing yes" before any sync, with a hook deleted, or after flush; yes with the daemon running, naming its PID', async () => {
    const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: lab.host.name, retries: 0, jitter_seconds: 0, decision_poll_seconds: 0 });
    dir = c.dir;

    const before = await status(c.path);
    expect(before.json).toMatchObject({ enforcing: false, enforcing_reason: "none of the agent's objects is in the kernel (flushed, or never synced)", daemon: { running: false, pid: null } });
    expect(before.text.enforcing).toBe("no (none of the agent's objects is in the kernel (flushed, or never synced))");
    expect(before.text.daemon).toBe('not running');

    d = new DaemonProcess(c.path, { WCF_AGENT_MINUTE_MS: '60000' });
    await d.waitForLog(/^cycle done/);
    const running = await status(c.path);
    expect(running.json.daemon).toMatchObject({ running: true, pid: d.pid });
    expect(running.json.daemon.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(running.json.enforcing).toBe(true);
    // Counted from the kernel (nftables only up to 20,000 applied: past that a listing fetches every element).
    expect(running.json.firewall.entries).toBe(running.json.applied);
    expect(running.json.next_sync).toEqual(expect.any(Number));
    expect(running.text.daemon).toMatch(new RegExp(`^running, pid ${d.pid}, up \\d+s$`));
    expect(running.text.enforcing).toBe(`yes (${running.json.applied} entries in the kernel)`);

    // A stopped daemon is not "running", and its next sync is not promised.
    expect(await d.stop()).toBe(0);
    const stopped = await status(c.path);
    expect(stopped.json).toMatchObject({ daemon: { running: false }, next_sync: null, enforcing: true });

    for (const [cmd, ...args] of DELETE_HOOK[plugin].commands) await lab.host.exec(cmd!, args);
    const hookless = await status(c.path);
    expect(hookless.json.enforcing).toBe(false);
    expect(hookless.json.enforcing_reason).toBe(`missing from the kernel: ${DELETE_HOOK[plugin].missing}`);
    expect(hookless.text.enforcing).toBe(`no (missing from the kernel: ${DELETE_HOOK[plugin].missing})`);

    expect((await runCli(['flush', '--config', c.path])).exitCode).toBe(0);
    const flushed = await status(c.path);
    expect(flushed.json).toMatchObject({ enforcing: false, enforcing_reason: "none of the agent's objects is in the kernel (flushed, or never synced)" });
  });
});

describe('status with a large nftables set', () => {
  let sim: Simulator;
  let lab: Lab;
  let dir: string | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 0, seed: 41, agentConfig: { maximum_rules: '30000', score_threshold: '1', sync_time: '5', running: 'true' } });
    // 25,000 fresh indicators, all selected, stamped over the last hour (feed pages follow ts).
    const now = sim.clock.now();
    for (let i = 0; i < 25_000; i++) sim.upsertIndicator({ ip: `11.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`, score: 10, ts: now - 3600 + Math.floor((i * 3590) / 25_000) });
    lab = await createLab();
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('past 20,000 applied entries: every applied entry checked in the kernel without listing the set; a flushed set is not enforcing', { timeout: 120_000 }, async () => {
    const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.host.name, retries: 0, jitter_seconds: 0, maximum_rules: 30_000, score_threshold: 1 });
    dir = c.dir;
    const sync = await runCli(['sync', '--once', '--json', '--config', c.path]);
    expect(sync.exitCode, sync.stderr).toBe(0);
    const applied = (JSON.parse(sync.stdout) as { applied: number }).applied;
    expect(applied).toBeGreaterThan(20_000);
    expect(await kernelEntries(lab.host, 'nftables')).toHaveLength(applied);
    const j = await runCli(['status', '--json', '--config', c.path]);
    expect(j.exitCode, j.stderr).toBe(0);
    const s = JSON.parse(j.stdout) as StatusJson;
    expect(s).toMatchObject({ enforcing: true, applied, enforcing_reason: `${applied} applied entries in the kernel (each one checked; the set is not listed past 20,000 entries)` });
    expect(s.firewall.entries).toBeNull();
    // Every object there, the set emptied by another process: not enforcing, and said why.
    await lab.host.exec('nft', ['flush', 'set', 'inet', 'wcf_agent', 'wcf-blocklist']);
    const flushed = JSON.parse((await runCli(['status', '--json', '--config', c.path])).stdout) as StatusJson;
    expect(flushed.enforcing).toBe(false);
    expect(flushed.enforcing_reason).toMatch(/^the kernel lacks entries the agent applied \(\d+ of \d+ not found: a set flushed or entries deleted by another process\)$/);
    expect((await runCli(['sync', '--once', '--config', c.path])).exitCode).toBe(0);
    // A hook deleted is still seen: the objects are always checked.
    for (const [cmd, ...args] of DELETE_HOOK.nftables.commands) await lab.host.exec(cmd!, args);
    const after = JSON.parse((await runCli(['status', '--json', '--config', c.path])).stdout) as StatusJson;
    expect(after).toMatchObject({ enforcing: false, enforcing_reason: `missing from the kernel: ${DELETE_HOOK.nftables.missing}` });
  });
});
