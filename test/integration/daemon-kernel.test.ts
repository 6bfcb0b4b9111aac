import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { agentObjectsPresent, kernelEntries, seedForeign, wipeKernel, type KernelPlugin } from '../helpers/kernel.js';
import { ADDR, Netns, createLab, isRoot, snapshot, type Lab } from '../netns/netns.js';

/**
 * The daemon's promises on real netfilter, black-box: `wcf-agent run` as a child
 * process applying its rules inside a test network namespace (config `netns`), the
 * kernel read back with the distribution's tools, traffic from a peer namespace.
 * Each test ends with a restart while the API is unreachable: what the kernel holds
 * then was put there by the start-up restore, before the first failed sync.
 */

const AGENT_CONFIG = { maximum_rules: '30', score_threshold: '4', sync_time: '5', running: 'true' } as const;
/** Every way the daemon logs putting objects back (the restore's own apply logs before its line). */
const REPAIRED = /re-asserted the last applied set|put back with the last applied set|have been re-created/;
/** A port nothing listens on: every API call is refused at once. */
const UNREACHABLE = 'http://127.0.0.1:9/api/v1';

describe.each(['nftables', 'ipset', 'iptables'] as const)('daemon on the %s backend in a namespace', (plugin: KernelPlugin) => {
  let sim: Simulator;
  let lab: Lab;
  const running: DaemonProcess[] = [];

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 2000, seed: 41, agentConfig: { ...AGENT_CONFIG } });
    sim.setDecision(ADDR.blocked, 1); // a manual block: never expires
    lab = await createLab();
    await seedForeign(lab.host);
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((d) => d.stop()));
    await lab?.destroy();
    await sim?.close();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((d) => d.stop()));
    sim.setAgentConfig(sim.agid, { ...AGENT_CONFIG });
    await wipeKernel(lab.host);
    await seedForeign(lab.host);
  });

  const setup = (extra: Record<string, unknown> = {}) => fastFailConfig(sim, { plugin, netns: lab.host.name, ...extra });
  const start = (path: string) => {
    const d = new DaemonProcess(path);
    running.push(d);
    return d;
  };
  /** Stop a daemon; its exit code must be 0 (the log tail explains a failure). */
  const stopped = async (d: DaemonProcess) => {
    const code = await d.stop();
    expect(code, `signal ${d.signalled}\n${d.raw.slice(-15).join('\n')}`).toBe(0);
  };
  /** Point the config at an address where no API answers. */
  const cutApi = (path: string) => {
    const cfg = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    writeFileSync(path, JSON.stringify({ ...cfg, base_url: UNREACHABLE }));
  };
  const kernel = () => kernelEntries(lab.host, plugin);
  /**
   * Start without an API; resolve with the kernel set read once the first sync has failed. Nothing
   * may have been repaired after the restore by then (the cycle's re-assertion before its pull, the
   * watcher): what the kernel holds is the restore's work alone.
   */
  const restartWithoutApi = async (path: string) => {
    cutApi(path);
    // Debug lines: the failed report (debug after a failed cycle) ends the cycle, its re-assertion included.
    const d = new DaemonProcess(path, { WCF_LOG_LEVEL: 'debug' });
    running.push(d);
    await d.waitForLog(/^sync failed/);
    await d.waitForLog(/^state report failed/);
    const entries = await kernel();
    const restoredAt = d.logs.findIndex((l) => /^restored the last known good set/.test(l.msg));
    const repairs = d.logs.slice(restoredAt + 1).filter((l) => REPAIRED.test(l.msg));
    expect(repairs.map((l) => l.msg), 'no repair after the restore').toEqual([]);
    return { d, entries };
  };

  it('kernel objects wiped, API unreachable, restart: the last applied set is back before the first failed sync', async () => {
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const applied = await kernel();
    expect(applied).toHaveLength(30);
    expect(applied).toContain(ADDR.blocked);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    await stopped(d);

    // A reboot, or another tool rewriting the ruleset: nothing of the agent's is left.
    await wipeKernel(lab.host);
    expect(await agentObjectsPresent(lab.host)).toEqual([]);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');

    const again = await restartWithoutApi(cfg.path);
    const restored = again.d.logs.findIndex((l) => /^restored the last known good set/.test(l.msg));
    const failed = again.d.logs.findIndex((l) => /^sync failed/.test(l.msg));
    expect(restored, 'the restore was logged').toBeGreaterThanOrEqual(0);
    expect(restored).toBeLessThan(failed);
    expect(again.d.logs[failed]!.msg).toMatch(/ECONNREFUSED|refused|unreachable/i);
    expect(again.entries).toEqual(applied);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
  });

  it('on_stop=flush: SIGTERM leaves the ruleset as it was found; a restart without the API restores the last set', async () => {
    const original = await snapshot(lab.host);
    const cfg = setup({ on_stop: 'flush' });
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    const applied = await kernel();
    expect(applied).toContain(ADDR.blocked);
    await stopped(d);
    expect(await agentObjectsPresent(lab.host)).toEqual([]);
    expect(await snapshot(lab.host)).toEqual(original);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');

    const again = await restartWithoutApi(cfg.path);
    expect(again.entries).toEqual(applied);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
  });

  it('running off: the rules leave the kernel while the daemon runs, and a restart without the API restores nothing', async () => {
    const original = await snapshot(lab.host);
    const cfg = setup();
    const d = start(cfg.path);
    await d.waitForLog(/^cycle done/);
    expect(await kernel()).toContain(ADDR.blocked);

    const reports = sim.reports.length;
    sim.setAgentConfig(sim.agid, { running: 'false' });
    await d.waitForLog(/running is disabled/);
    // It keeps syncing and reporting, with an empty blacklist: the report follows the whole
    // removal (which takes more than one command on the xtables backends).
    await waitFor(
      () => sim.reports.slice(reports).some((r) => (r.body as { code: number; blacklist: string[] }).blacklist.length === 0),
      'a report of the empty set',
    );
    expect(await agentObjectsPresent(lab.host)).toEqual([]);
    expect(await snapshot(lab.host)).toEqual(original);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
    await stopped(d);

    const again = await restartWithoutApi(cfg.path);
    expect(again.d.count(/^no last known good set to restore/)).toBe(1);
    expect(again.d.count(/^restored the last known good set/)).toBe(0);
    expect(again.entries).toEqual([]);
    expect(await agentObjectsPresent(lab.host)).toEqual([]);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
  });
});

describe('daemon SIGHUP that renames its objects or changes the backend, in a namespace', () => {
  let sim: Simulator;
  let lab: Lab;
  let d: DaemonProcess | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 2000, seed: 43, agentConfig: { ...AGENT_CONFIG } });
    sim.setDecision(ADDR.blocked, 1);
    lab = await createLab();
    await seedForeign(lab.host);
  });
  afterAll(async () => {
    await d?.stop();
    await lab?.destroy();
    await sim?.close();
  });

  /** SIGHUP, then wait for the reload that removes the old objects and a whole cycle after it. */
  const reloadAndCycle = async (daemon: DaemonProcess) => {
    const flushes = daemon.count(/^owned object names or plugin changed: removing the old objects/);
    const reloads = daemon.count(/^configuration reloaded/);
    daemon.signal('SIGHUP');
    await daemon.waitForLog(/^owned object names or plugin changed: removing the old objects/, flushes + 1);
    await daemon.waitForLog(/^configuration reloaded/, reloads + 1);
    // A cycle that started after the reload (its apply may take several commands).
    const after = daemon.logs.length;
    await waitFor(() => daemon.logs.slice(after).some((l) => /^cycle done/.test(l.msg)), 'a cycle after the reload');
  };

  it('the old objects are flushed, the new ones hold the set, foreign objects stay, traffic stays blocked', async () => {
    const original = await snapshot(lab.host);
    const cfg = fastFailConfig(sim, { plugin: 'nftables', netns: lab.host.name });
    d = new DaemonProcess(cfg.path);
    await d.waitForLog(/^cycle done/);
    const applied = await kernelEntries(lab.host, 'nftables');
    expect(applied).toContain(ADDR.blocked);

    const renamed = { set: 'wcf-renamed', chain: 'WCF-RENAMED', table: 'wcf_renamed' };
    const base = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(cfg.path, JSON.stringify({ ...base, set_name: renamed.set, chain_name: renamed.chain, table_name: renamed.table }));
    await reloadAndCycle(d);
    expect(await agentObjectsPresent(lab.host)).toEqual([]); // nothing left under the old names
    expect(await kernelEntries(lab.host, 'nftables', renamed)).toEqual(applied);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');

    writeFileSync(cfg.path, JSON.stringify({ ...base, plugin: 'ipset', set_name: renamed.set, chain_name: renamed.chain, table_name: renamed.table }));
    await reloadAndCycle(d);
    expect(await agentObjectsPresent(lab.host, renamed)).toEqual([`ipset ${renamed.set}`, `iptables chain ${renamed.chain}`]);
    expect(await kernelEntries(lab.host, 'ipset', renamed)).toEqual(applied);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');

    // on_stop stays keep: a plain flush afterwards leaves the ruleset as it was found.
    expect(await d.stop()).toBe(0);
    const flushed = await runCli(['flush', '--config', cfg.path]);
    expect(flushed.exitCode, flushed.stderr).toBe(0);
    expect(await snapshot(lab.host)).toEqual(original);
  });
});

describe('daemon stopping while an apply runs, in a namespace', () => {
  let sim: Simulator;
  let ns: Netns;
  let shims: string;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 500, seed: 44, agentConfig: { ...AGENT_CONFIG } });
    ns = await Netns.create();
    shims = mkdtempSync(join(tmpdir(), 'wcf-shim-'));
  });
  afterAll(async () => {
    await ns?.destroy();
    await sim?.close();
    rmSync(shims, { recursive: true, force: true });
  });

  it('SIGTERM, and a second one, while a firewall command runs: the apply finishes, exit 0, the set is whole', async () => {
    // An `nft` first on PATH (ip netns exec looks it up there) that, while GATE exists, holds
    // every `nft -f` (the apply) until the test removes GATE, then runs the real nft.
    const gate = join(shims, 'gate');
    const held = join(shims, 'held');
    const realNft = (await execa('sh', ['-c', 'command -v nft'])).stdout.trim();
    writeFileSync(
      join(shims, 'nft'),
      `#!/bin/sh\ncase " $* " in *" -f "*) if [ -e '${gate}' ]; then touch '${held}'; while [ -e '${gate}' ]; do sleep 0.05; done; fi;; esac\nexec '${realNft}' "$@"\n`,
      { mode: 0o755 },
    );
    const cfg = fastFailConfig(sim, { plugin: 'nftables', netns: ns.name });
    writeFileSync(gate, '');
    const d = new DaemonProcess(cfg.path, { PATH: `${shims}:${process.env.PATH ?? ''}` });
    try {
      await waitFor(() => existsSync(held), 'the first apply held');
      d.signal('SIGTERM');
      await d.waitForLog(/^stopping$/);
      d.signal('SIGTERM');
      await d.waitForLog(/^already stopping$/);
      rmSync(gate);
      expect(await d.exit(), `signal ${d.signalled}`).toBe(0);
      expect(d.count(/^cycle done/)).toBe(1);
      expect((await kernelEntries(ns, 'nftables')).length).toBe(30);
    } finally {
      rmSync(gate, { force: true });
      await d.stop();
    }
  });
});
