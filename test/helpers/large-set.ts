import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { isRoot, Netns } from '../netns/netns.js';

/**
 * What the tests of a daemon at 100,000 entries share: a simulator whose feed selects about `size`
 * indicators (stamped ahead of the agent's clock, as the scale benchmark does, so decay leaves
 * most above the threshold), a namespace for the agent's rules, and temp dirs removed at the end.
 */
export interface LargeSetLab {
  readonly sim: Simulator;
  readonly ns: Netns;
  /** A temp dir removed by close(). */
  dir(prefix: string): string;
  /**
   * An `nft` first on PATH (ip netns exec looks it up there) that runs `before` (shell, with the
   * arguments in "$*") and then the real nft; the PATH to give the daemon.
   */
  nftShim(before: string): Promise<string>;
  close(): Promise<void>;
}

export async function largeSetLab(size: number, seed: number, syncTimeMinutes: number): Promise<LargeSetLab> {
  if (!isRoot) throw new Error('these tests need root (network namespaces)');
  const sim = await startSimulator({
    indicators: Math.round(size * 1.2),
    seed,
    now: Math.floor(Date.now() / 1000) + 30 * 86_400,
    agentConfig: { maximum_rules: String(size), score_threshold: '1', sync_time: String(syncTimeMinutes), running: 'true' },
  });
  const ns = await Netns.create();
  const dirs: string[] = [];
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  return {
    sim,
    ns,
    dir,
    async nftShim(before) {
      const shims = dir('wcf-shim-');
      const realNft = (await execa('sh', ['-c', 'command -v nft'])).stdout.trim();
      writeFileSync(join(shims, 'nft'), `#!/bin/sh\n${before}\nexec '${realNft}' "$@"\n`, { mode: 0o755 });
      return `${shims}:${process.env.PATH ?? ''}`;
    },
    async close() {
      await ns.destroy();
      await sim.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
