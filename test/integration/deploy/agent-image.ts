import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADDR, type Netns } from '../../netns/netns.js';
import type { Simulator } from '../../simulator/index.js';
import { IMAGE, type Podman } from './podman.js';

/**
 * What the deployment tests share: the agent's config and token as a user mounts them
 * (a config directory at /etc/wcf-agent, the token as a separate read-only file, as a
 * Kubernetes Secret would be), and readers of the kernel's state in a namespace.
 */

export const TOKEN_PATH = '/run/secrets/wcf-agent/token';
export const API_PORT = 9080;

export interface MountedConfig {
  /** Host directory holding config.json (mounted at /etc/wcf-agent/config.json) and the token. */
  readonly dir: string;
  /** Host file mounted at TOKEN_PATH. */
  readonly token: string;
  /** `podman run` arguments mounting both read-only. */
  readonly mounts: string[];
  remove(): void;
}

/**
 * The simulator's feed for these tests: 150 fresh indicators with high scores and the
 * lab's addresses (ADDR.blocked and ADDR.net24 selected, ADDR.allowed below the
 * threshold). Nothing crosses the threshold while a test runs, so a plan computed a few
 * seconds after the daemon's cycle selects the same set (with maximum_rules 100 and
 * score_threshold 4).
 */
export function seedSimulator(sim: Simulator): void {
  for (let i = 0; i < 150; i++) sim.upsertIndicator({ ip: `203.0.${113 + (i >> 7)}.${(i % 128) + 1}`, score: 9.5 - (i % 50) / 100 });
  sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
  sim.upsertIndicator({ ip: ADDR.net24, score: 9.8, is_network: true });
  sim.upsertIndicator({ ip: ADDR.allowed, score: 1 });
}

/** config.json for an agent reaching the simulator through a relay at 127.0.0.1:API_PORT in its namespace. */
export function mountedConfig(sim: Pick<Simulator, 'agid' | 'url' | 'token'>, extra: Record<string, unknown> = {}): MountedConfig {
  const base = mkdtempSync(join(tmpdir(), 'wcf-deploy-cfg-'));
  const token = join(base, 'token');
  writeFileSync(token, `${sim.token}\n`, { mode: 0o600 });
  const config = {
    agid: sim.agid,
    base_url: `http://127.0.0.1:${API_PORT}${new URL(sim.url).pathname}`,
    token_file: TOKEN_PATH,
    retries: 0,
    jitter_seconds: 0,
    // A restarted container syncs at once: the tests wait for that sync (the start-up delay has its own tests).
    startup_delay_seconds: 0,
    connect_timeout_ms: 1000,
    request_timeout_ms: 2000,
    ...extra,
  };
  // A ConfigMap's file is world-readable: it holds no secret, the token is elsewhere.
  writeFileSync(join(base, 'config.json'), JSON.stringify(config, null, 2));
  chmodSync(join(base, 'config.json'), 0o644);
  return {
    dir: base,
    token,
    mounts: ['-v', `${join(base, 'config.json')}:/etc/wcf-agent/config.json:ro`, '-v', `${token}:${TOKEN_PATH}:ro`],
    remove: () => rmSync(base, { recursive: true, force: true }),
  };
}

/** `podman run` arguments of the agent as the DaemonSet runs it, in the namespace `ns`. */
export function agentRunArgs(ns: Netns, cfg: MountedConfig, stateVolume: string): string[] {
  return [
    '--network',
    `ns:/run/netns/${ns.name}`,
    '--cap-drop',
    'ALL',
    '--cap-add',
    'NET_ADMIN,NET_RAW',
    '--read-only',
    '--read-only-tmpfs=false',
    ...cfg.mounts,
    '-v',
    `${stateVolume}:/var/lib/wcf-agent`,
  ];
}

/**
 * The agent's entries as the kernel holds them in `ns`: the suite's one reader (both nftables
 * sets, the host addresses' and the networks'; the ipset ownership marker left out).
 */
export { kernelEntries } from '../../helpers/kernel.js';

/** `wcf-agent plan --json` run from the image in `ns`: the addresses it would apply, sorted. */
export async function planFromImage(podman: Podman, ns: Netns, cfg: MountedConfig, stateVolume: string): Promise<string[]> {
  const out = await podman.ok(['run', '--rm', ...agentRunArgs(ns, cfg, stateVolume), IMAGE, 'plan', '--json']);
  return (JSON.parse(out) as { entries: { ip: string }[] }).entries.map((e) => e.ip).sort();
}
