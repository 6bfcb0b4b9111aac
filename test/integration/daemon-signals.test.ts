import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { kernelEntries } from '../helpers/kernel.js';
import { Netns, isRoot } from '../netns/netns.js';

/**
 * Signals are answered at once whatever the daemon is doing, and its children never outlive it.
 * An `nft` first on PATH (ip netns exec looks it up there) holds the commands a test names while
 * a gate file exists, then runs the real nft: a long apply or a long listing without any sleep.
 */

/** Generous deadlines: the machine is shared, and a cycle there can take tens of seconds. Every wait ends on an event. */
const LONG = 90_000;
const AGENT_CONFIG = { maximum_rules: '30', score_threshold: '4', sync_time: '5', running: 'true' } as const;

/** Direct children of `pid` (process ids). */
async function children(pid: number): Promise<number[]> {
  const out = (await execa('pgrep', ['-P', String(pid)], { reject: false })).stdout;
  return out.split('\n').filter(Boolean).map(Number);
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(safeStatus(pid));
function safeStatus(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}

describe('daemon signals and children, nftables in a namespace', () => {
  let sim: Simulator;
  let ns: Netns;
  let shims: string;
  let realNft: string;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 500, seed: 45, agentConfig: { ...AGENT_CONFIG } });
    ns = await Netns.create();
    shims = mkdtempSync(join(tmpdir(), 'wcf-shim-'));
    realNft = (await execa('sh', ['-c', 'command -v nft'])).stdout.trim();
  });
  // Each test's agent has a state dir of its own: what one left is, to the next, another agent's table.
  afterEach(async () => {
    await ns.exec('nft', ['flush', 'ruleset']);
  });
  afterAll(async () => {
    await ns?.destroy();
    await sim?.close();
    rmSync(shims, { recursive: true, force: true });
  });

  /** The shim: commands whose arguments match the shell `case` pattern wait at the gate (`skip`: a pattern let through first). */
  const shim = (pattern: string, skip = '*" never "*') => {
    const gate = join(shims, 'gate');
    const held = join(shims, 'held');
    rmSync(held, { force: true });
    writeFileSync(
      join(shims, 'nft'),
      `#!/bin/sh\ncase " $* " in ${skip}) ;; ${pattern}) if [ -e '${gate}' ]; then touch '${held}'; while [ -e '${gate}' ]; do sleep 0.05; done; fi;; esac\nexec '${realNft}' "$@"\n`,
      { mode: 0o755 },
    );
    writeFileSync(gate, '');
    return { gate, held, env: { PATH: `${shims}:${process.env.PATH ?? ''}` } };
  };

  it('SIGHUP during a long apply: "configuration reloaded" while the apply is still held; the next cycle runs with it', async () => {
    await execa('ip', ['netns', 'exec', ns.name, 'nft', 'flush', 'ruleset']);
    const s = shim(`*" -f "*`, `*" -c "*`); // an apply (`nft -f -`), not the check (`nft -c -f -`)
    const cfg = fastFailConfig(sim, { plugin: 'nftables', netns: ns.name });
    const d = new DaemonProcess(cfg.path, s.env);
    try {
      await waitFor(() => existsSync(s.held), 'the first apply held', LONG);
      d.signal('SIGHUP');
      const line = await d.waitForLog(/^configuration reloaded$/, 1, LONG);
      // Answered while the apply is still held: the daemon did not wait for it.
      expect(existsSync(s.gate)).toBe(true);
      expect(line.pending).toMatch(/previous configuration/);
      rmSync(s.gate);
      await waitFor(() => d.logs.some((l) => l.msg === 'cycle done' && Number(l.configGeneration) >= 1), 'a cycle with the reloaded configuration', LONG);
      expect(await d.stop()).toBe(0);
      expect((await kernelEntries(ns, 'nftables')).length).toBe(30);
    } finally {
      rmSync(s.gate, { force: true });
      await d.stop();
    }
  }, 300_000);

  it('SIGTERM during a long listing: the listing is ended and the daemon exits without waiting for it', async () => {
    // A table from an earlier run: the new daemon has no record of it and reads it back.
    const s = shim(`*" list "*`);
    rmSync(s.gate);
    const cfg = fastFailConfig(sim, { plugin: 'nftables', netns: ns.name });
    const first = new DaemonProcess(cfg.path, s.env);
    await first.waitForLog(/^cycle done/, 1, LONG);
    expect(await first.stop()).toBe(0);
    writeFileSync(s.gate, '');
    const d = new DaemonProcess(cfg.path, s.env);
    try {
      await waitFor(() => existsSync(s.held), 'a listing held', LONG);
      d.signal('SIGTERM');
      await d.waitForLog(/^stopping$/, 1, LONG);
      expect(await d.exit(), `signal ${d.signalled}\n${d.raw.slice(-25).map((l) => l.slice(0, 300)).join('\n')}`).toBe(0);
      // Exited while the listing would still be waiting at the gate.
      expect(existsSync(s.gate)).toBe(true);
    } finally {
      rmSync(s.gate, { force: true });
      await d.stop();
    }
  }, 300_000);

  it('SIGKILL of the agent: its children (the event monitor, a command in flight) die with it', async () => {
    const s = shim(`*" -f "*`); // hold every transaction and check: a command is in flight when the agent dies
    rmSync(s.gate);
    const cfg = fastFailConfig(sim, { plugin: 'nftables', netns: ns.name });
    const d = new DaemonProcess(cfg.path, s.env);
    await d.waitForLog(/^cycle done/, 1, LONG);
    writeFileSync(s.gate, '');
    await waitFor(() => existsSync(s.held), 'a command held', LONG);
    const kids = await waitFor(async () => {
      const k = await children(d.pid);
      return k.length >= 2 ? k : undefined; // the monitor and the held command
    }, 'the daemon’s children', LONG);
    d.signal('SIGKILL');
    await d.exit().catch(() => undefined);
    await waitFor(() => kids.every((pid) => !alive(pid)), 'the children to be gone', 10_000);
    rmSync(s.gate, { force: true });
  }, 300_000);
});
