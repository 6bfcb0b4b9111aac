/**
 * The container's memory, for the DaemonSet's requests and limits: the image
 * (npm run build:image) run by podman with its network in a namespace this script
 * creates, against the simulator with every indicator selected, as the deployment
 * tests run it. Reads the container's cgroup (v1 memory controller: what a memory
 * limit counts, the nft/ipset children included) after the first full cycle, its
 * peak, and the daemon's own VmHWM. Needs root, podman, runc.
 *
 *   npx tsx scripts/bench/standalone/image.ts [--sizes 10000,100000] [--plugins nftables,ipset] [--runs 1]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startSimulatorProcess } from '../simulator.js';
import { Netns, destroyAll } from '../../../test/netns/netns.js';
import { relayInto } from '../../../test/netns/relay.js';
import { IMAGE, Podman, uniqueName } from '../../../test/integration/deploy/podman.js';
import { agentRunArgs, mountedConfig, API_PORT } from '../../../test/integration/deploy/agent-image.js';

const { values } = parseArgs({
  options: { sizes: { type: 'string', default: '10000,100000' }, plugins: { type: 'string', default: 'nftables,ipset' }, runs: { type: 'string', default: '1' } },
});
const SIZES = values.sizes.split(',').map(Number);
const PLUGINS = values.plugins.split(',');
const RUNS = Number(values.runs);
/** The simulator's clock a month ahead, threshold 1: every indicator is selected (as scripts/bench/daemon.ts does). */
const AHEAD_S = 30 * 86_400;
const MB = 1024 * 1024;

const cgroupFile = (id: string, name: string) => Number(readFileSync(`/sys/fs/cgroup/memory/libpod_parent/libpod-${id}/${name}`, 'utf8').trim());
const cgroupStat = (id: string, key: string) => {
  const line = readFileSync(`/sys/fs/cgroup/memory/libpod_parent/libpod-${id}/memory.stat`, 'utf8').split('\n').find((l) => l.startsWith(`${key} `));
  return Number(line?.split(' ')[1] ?? NaN);
};

async function once(podman: Podman, size: number, plugin: string): Promise<string> {
  const sim = await startSimulatorProcess(size, 1, Math.floor(Date.now() / 1000) + AHEAD_S);
  const ns = await Netns.create();
  const relay = await relayInto(ns, '127.0.0.1', API_PORT, { host: '127.0.0.1', port: Number(new URL(sim.url).port) });
  const volume = uniqueName('bench-state');
  const cfg = mountedConfig(sim, {
    plugin,
    maximum_rules: size,
    score_threshold: 1,
    request_timeout_ms: 30_000,
    connect_timeout_ms: 5000,
  });
  try {
    await sim.setAgentConfig({ maximum_rules: size, score_threshold: 1, sync_time: 60 });
    const name = uniqueName('bench');
    const started = Date.now();
    const id = (await podman.ok(['run', '-d', '--name', name, ...agentRunArgs(ns, cfg, volume), IMAGE])).trim();
    // The first cycle's end: its state report ("cycle done" in the JSON log).
    for (;;) {
      const logs = (await podman.run(['logs', name])).stderr;
      if (/"msg":"cycle done"/.test(logs)) break;
      if (/"level":(5|6)0/.test(logs) || Date.now() - started > 600_000) throw new Error(`no cycle done:\n${logs.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const cycleS = (Date.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 5000));
    const pid = (await podman.ok(['inspect', '-f', '{{.State.Pid}}', name])).trim();
    const hwm = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
    const peak = cgroupFile(id, 'memory.max_usage_in_bytes') / MB;
    const usage = cgroupFile(id, 'memory.usage_in_bytes') / MB;
    const anon = cgroupStat(id, 'total_rss') / MB;
    const cache = cgroupStat(id, 'total_cache') / MB;
    await podman.run(['rm', '-f', '-t', '0', name]);
    await podman.run(['run', '--rm', ...agentRunArgs(ns, cfg, volume), IMAGE, 'flush']);
    return `${plugin} ${size}: first cycle done ${cycleS.toFixed(1)} s after start; cgroup peak ${peak.toFixed(0)} MB (page cache included), now ${usage.toFixed(0)} MB (anon ${anon.toFixed(0)}, page cache ${cache.toFixed(0)}); daemon VmHWM ${hwm.toFixed(0)} MB, VmRSS ${rss.toFixed(0)} MB`;
  } finally {
    await podman.run(['volume', 'rm', '-f', volume]);
    await relay.close();
    await ns.destroy();
    await sim.close();
    cfg.remove();
  }
}

const podman = Podman.create();
try {
  await podman.loadImage();
  for (const size of SIZES) for (const plugin of PLUGINS) for (let i = 0; i < RUNS; i++) console.log(await once(podman, size, plugin));
} finally {
  await podman.destroy();
  await destroyAll();
}
