import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { waitFor } from '../../helpers/cli.js';
import { ADDR, createLab, isRoot, Netns, snapshot, type Lab, type RulesetSnapshot } from '../../netns/netns.js';
import { relayInto, type InNamespace } from '../../netns/relay.js';
import { agentRunArgs, API_PORT, kernelEntries, mountedConfig, planFromImage, seedSimulator, type MountedConfig } from './agent-image.js';
import { IMAGE, Podman, uniqueName } from './podman.js';

/**
 * The image as a fleet runs it: `podman run` with the container's network in a test
 * namespace (never the machine's), NET_ADMIN and NET_RAW only, a read-only root, the
 * config and the token mounted read-only, the state dir on a volume. The agent in it
 * talks to the simulator through a relay at 127.0.0.1 inside the namespace.
 */

describe.each(['nftables', 'ipset'] as const)('the image with the %s backend', (plugin) => {
  let podman: Podman;
  let sim: Simulator;
  let lab: Lab;
  let relay: InNamespace;
  let cfg: MountedConfig;
  let original: RulesetSnapshot;
  const volume = uniqueName('state');
  const first = uniqueName('agent');
  const second = uniqueName('agent');
  const rebooted: Netns[] = [];
  let applied: string[] = [];

  const logs = async (name: string) => (await podman.run(['logs', name])).stderr.split('\n').slice(-30).join('\n');

  beforeAll(async () => {
    if (!isRoot) throw new Error('the deployment tests need root (network namespaces, podman)');
    podman = Podman.create();
    await podman.loadImage();
    sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '5', running: 'true' } });
    seedSimulator(sim);
    lab = await createLab();
    // Someone else's objects: flush must leave them byte for byte.
    await lab.host.exec('nft', ['add', 'table', 'inet', 'someone_else']);
    await lab.host.exec('ipset', ['create', 'someone-else', 'hash:ip']);
    original = await snapshot(lab.host);
    relay = await relayInto(lab.host, '127.0.0.1', API_PORT, { host: '127.0.0.1', port: Number(new URL(sim.url).port) });
    cfg = mountedConfig(sim, { plugin, decision_poll_seconds: 0 });
    await podman.ok(['volume', 'create', volume]);
  }, 600_000);

  afterAll(async () => {
    await podman?.destroy();
    await relay?.close();
    await lab?.destroy();
    for (const ns of rebooted) await ns.destroy();
    await sim?.close();
    cfg?.remove();
  }, 120_000);

  it('runs the daemon: the namespace holds exactly what plan selects, and drops traffic from it', async () => {
    await podman.ok(['run', '-d', '--name', first, ...agentRunArgs(lab.host, cfg, volume), IMAGE]);
    const plan = await planFromImage(podman, lab.host, cfg, volume);
    expect(plan).toHaveLength(100);
    expect(plan).toEqual(expect.arrayContaining([ADDR.blocked, ADDR.net24]));
    expect(plan).not.toContain(ADDR.allowed);
    const same = await waitFor(async () => JSON.stringify(await kernelEntries(lab.host, plugin)) === JSON.stringify(plan), 'the kernel set to equal plan', 60_000, 250).catch(
      async (err: Error) => {
        throw new Error(`${err.message}; kernel holds ${(await kernelEntries(lab.host, plugin)).length} entries; logs:\n${await logs(first)}`);
      },
    );
    expect(same).toBe(true);
    applied = plan;
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    const status = JSON.parse(await podman.ok(['exec', first, 'wcf-agent', 'status', '--json'])) as { enforcing: boolean; daemon: { running: boolean } };
    expect(status.enforcing).toBe(true);
    expect(status.daemon.running).toBe(true);
    // The exec probe.
    const probe = await podman.run(['exec', first, 'wcf-agent', 'status', '--probe']);
    expect(probe.exitCode, probe.stderr).toBe(0);
    expect(probe.stdout).toMatch(/^ready: enforcing, 100 entries in the kernel/);
  });

  it('is the amd64 image of the archive, and hears another tool remove its objects through its event source (xtables-monitor under stdbuf for nftables)', async () => {
    expect((await podman.ok(['image', 'inspect', '--format', '{{.Architecture}}', IMAGE])).trim()).toBe('amd64');
    const logged = async () =>
      (await podman.run(['logs', first])).stderr
        .split('\n')
        .flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as { msg: string; events?: string; by?: string[] }] : []));
    const watching = await waitFor(async () => (await logged()).find((l) => l.msg.startsWith('watching the agent’s firewall objects')), 'the watcher', 30_000, 250);
    // The image has stdbuf, so the nftables backend's source is xtables-monitor (nft monitor
    // would keep a copy of the whole ruleset); the ipset backend's is nft monitor.
    expect(watching.events).toBe(plugin === 'nftables' ? 'xtables-monitor' : 'nft monitor');
    if (plugin === 'nftables') await lab.host.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
    else await lab.host.exec('iptables', ['-D', 'INPUT', '-m', 'comment', '--comment', 'wcf-agent', '-j', 'WCF-AGENT']);
    // Put back within seconds, the removal attributed to the program that made it: only an
    // event says who (the periodic check, the fallback, cannot); with nftables and a live
    // event source there is no periodic check at all.
    const repair = await waitFor(async () => (await logged()).find((l) => /put back with the last applied set/.test(l.msg)), 'the repair', 10_000, 250).catch(
      async (err: Error) => {
        throw new Error(`${err.message}; logs:\n${await logs(first)}`);
      },
    );
    expect(repair.by?.join(' ')).toMatch(plugin === 'nftables' ? /^nft \(pid \d+\)$/ : /^iptables/);
    expect(await kernelEntries(lab.host, plugin)).toEqual(applied);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
  });

  it('killed and started again on a node whose ruleset is empty, with the API down: the set is back from the state volume', async () => {
    await podman.ok(['kill', '-s', 'KILL', first]);
    await podman.ok(['rm', first]);
    await relay.close();
    // A rebooted node: a fresh namespace, nothing in its ruleset, no route to the API.
    const node = await Netns.create();
    rebooted.push(node);
    const empty = await snapshot(node);
    expect(await kernelEntries(node, plugin)).toEqual([]);
    await podman.ok(['run', '-d', '--name', second, ...agentRunArgs(node, cfg, volume), IMAGE]);
    await waitFor(async () => JSON.stringify(await kernelEntries(node, plugin)) === JSON.stringify(applied), 'the restored set', 60_000, 250).catch(async (err: Error) => {
      throw new Error(`${err.message}; logs:\n${await logs(second)}`);
    });
    // The API is down: the daemon keeps running and keeps the set (no crash loop).
    const restoredLog = await waitFor(async () => {
      const text = (await podman.run(['logs', second])).stderr;
      return /restored the last known good set \(\d+ entries\) before any network call/.test(text) && /sync failed, previous firewall state kept/.test(text) ? text : undefined;
    }, 'the restore and a failed sync in the logs', 30_000, 250).catch(async (err: Error) => {
      throw new Error(`${err.message}; logs:\n${await logs(second)}`);
    });
    expect(restoredLog).toContain(`restored the last known good set (${applied.length} entries)`);
    expect((await podman.ok(['inspect', '-f', '{{.State.Running}}', second])).trim()).toBe('true');
    expect(await kernelEntries(node, plugin)).toEqual(applied);

    // flush from the image, on that node: its ruleset is as it was before the agent came.
    await podman.ok(['stop', '-t', '20', second]);
    const flushed = await podman.run(['run', '--rm', ...agentRunArgs(node, cfg, volume), IMAGE, 'flush']);
    expect(flushed.exitCode, flushed.stderr).toBe(0);
    expect(await snapshot(node)).toEqual(empty);
  });

  it('flush from the image leaves the first namespace as it was, someone else\'s objects included', async () => {
    const flushed = await podman.run(['run', '--rm', ...agentRunArgs(lab.host, cfg, volume), IMAGE, 'flush']);
    expect(flushed.exitCode, flushed.stderr).toBe(0);
    expect(flushed.stderr).toContain(`flushed: removed the ${plugin} objects owned by wcf-agent`);
    expect(await snapshot(lab.host)).toEqual(original);
  });
});
