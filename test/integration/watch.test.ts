import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { isRoot, Netns } from '../netns/netns.js';
import { ipsetEntries, nftElements } from './firewall/kernel.js';

/**
 * The daemon's watcher on real netfilter in a namespace: another tool removes
 * the agent's objects between cycles, and the daemon puts them back with the
 * same set, while the simulator is stopped (so nothing can come from a pull).
 */

type Backend = 'ipset' | 'nftables';
/** How long a repair may take (the periodic check runs every 5 s; events are heard at once). */
const REPAIR_DEADLINE_MS = 10_000;
const REPAIRED = /put back with the last applied set/;
const WATCHING = /watching the agent’s firewall objects/;

interface Setup {
  ns: Netns;
  cfgPath: string;
  /** `iptables-save` of the namespace before the agent ever ran. */
  savedBefore: string;
}

/** CIDR -> remaining seconds, as the kernel lists the agent's set (permanent: 0). */
async function kernelSet(ns: Netns, backend: Backend): Promise<Map<string, number>> {
  if (backend === 'ipset') return ipsetEntries(ns).catch(() => new Map<string, number>());
  const out = new Map<string, number>();
  const elems = await nftElements(ns).catch(() => new Map<string, { expires?: number }>());
  for (const [cidr, e] of elems) out.set(cidr, e.expires ?? 0);
  return out;
}

/** The agent's rules are in place: hooks, chain rule (ipset) or the table's chains (nft). */
async function hooked(ns: Netns, backend: Backend): Promise<boolean> {
  try {
    if (backend === 'ipset') {
      const all = await ns.exec('iptables', ['-S']);
      const hook = (chain: string) => `-A ${chain} -m comment --comment wcf-agent -j WCF-AGENT`;
      return all.includes(hook('INPUT')) && all.includes(hook('FORWARD')) && all.includes('-m set --match-set wcf-blocklist src -j DROP');
    }
    const table = await ns.exec('nft', ['list', 'table', 'inet', 'wcf_agent']);
    return /hook prerouting/.test(table) && /hook output/.test(table) && (table.match(/@wcf-blocklist/g) ?? []).length >= 2;
  } catch {
    return false;
  }
}

/** The set is back with the same entries, no timeout longer than it was before the removal. */
function sameSetNotLonger(now: Map<string, number>, before: Map<string, number>): boolean {
  if (now.size !== before.size) return false;
  for (const [cidr, t] of before) {
    const n = now.get(cidr);
    if (n === undefined) return false;
    if (t === 0 ? n !== 0 : n > t) return false;
  }
  return true;
}

async function setup(backend: Backend): Promise<Setup> {
  const ns = await Netns.create();
  // A host with its own filter rules, saved before the agent ever ran (what a restore of a saved file brings back).
  await ns.exec('iptables', ['-A', 'INPUT', '-s', '203.0.113.9', '-j', 'ACCEPT']);
  const savedBefore = await ns.exec('iptables-save', []);
  const sim = await startSimulator({ indicators: 400, seed: 14, agentConfig: { maximum_rules: '300', score_threshold: '3', running: 'true' } });
  const now = Math.floor(Date.now() / 1000);
  sim.upsertIndicator({ ip: '198.18.0.7', score: 9.9, ts: now });
  const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: backend, netns: ns.name, retries: 0, jitter_seconds: 0 });
  // One real sync fills the kernel and the applied set; then the server goes away for good.
  const r = await runCli(['sync', '--once', '--config', cfg.path]);
  expect(r.exitCode, r.stderr).toBe(0);
  await sim.close();
  return { ns, cfgPath: cfg.path, savedBefore };
}

async function repairsInStatus(s: Setup): Promise<{ repairs: number; last_repair: number | null; last_repair_objects: string[] }> {
  const r = await runCli(['status', '--json', '--config', s.cfgPath]);
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { repairs: number; last_repair: number | null; last_repair_objects: string[] };
}

/** A daemon that restored the set from its state dir and whose watcher has looked once. */
async function startDaemon(s: Setup): Promise<DaemonProcess> {
  // Real minutes: the failing cycles (no server) are retried only after half a minute.
  const d = new DaemonProcess(s.cfgPath, { WCF_AGENT_MINUTE_MS: '60000' });
  await d.waitForLog(WATCHING);
  return d;
}

/** Run `remove` against a running daemon; the objects and the same set must be back within the deadline. */
async function expectRepaired(s: Setup, backend: Backend, remove: (ns: Netns) => Promise<unknown>, missingPattern: RegExp, by?: RegExp): Promise<void> {
  const repairsBefore = await repairsInStatus(s);
  const d = await startDaemon(s);
  try {
    const before = await kernelSet(s.ns, backend);
    expect(before.size).toBeGreaterThan(10);
    expect(await hooked(s.ns, backend)).toBe(true);
    await remove(s.ns);
    await waitFor(
      async () => (await hooked(s.ns, backend)) && sameSetNotLonger(await kernelSet(s.ns, backend), before),
      'the agent’s objects and set to be back',
      REPAIR_DEADLINE_MS,
    );
    const line = await d.waitForLog(REPAIRED);
    expect((line.missing as string[]).join(', ')).toMatch(missingPattern);
    expect(d.count(/have been re-created/)).toBe(0); // one line per repair: the watcher's
    // Who is likely to blame, as the kernel names the program that changed the ruleset.
    if (by) expect(line.by).toEqual([expect.stringMatching(by)]);
    // `status` shows the repair: one more than before, the objects named.
    const st = await waitFor(async () => {
      const j = await repairsInStatus(s);
      return j.repairs === repairsBefore.repairs + 1 ? j : undefined;
    }, 'status to count the repair', REPAIR_DEADLINE_MS);
    expect(st.last_repair).not.toBeNull();
    expect(st.last_repair_objects.join(', ')).toMatch(missingPattern);
    expect(await d.stop()).toBe(0); // SIGTERM still stops it cleanly with the monitor child running
    expect(d.count(/sync failed/)).toBeGreaterThanOrEqual(1); // the server was unreachable: the set came from memory
  } finally {
    if (process.env.WATCH_DEBUG) console.log(d.raw.map((l) => l.slice(0, 300)).join('\n'));
    await d.stop();
  }
}

describe.each(['ipset', 'nftables'] as const)('watching between cycles with the %s backend', (backend) => {
  let s: Setup;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    s = await setup(backend);
  });
  afterAll(async () => {
    await s?.ns.destroy();
  });

  it('nft flush ruleset', async () => {
    await expectRepaired(s, backend, (ns) => ns.exec('nft', ['flush', 'ruleset']), backend === 'ipset' ? /WCF-AGENT/ : /nft table inet wcf_agent/);
  });

  if (backend === 'nftables') {
    it('nft delete table inet wcf_agent', async () => {
      await expectRepaired(s, backend, (ns) => ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']), /nft table inet wcf_agent/, /^nft \(pid \d+\)$/);
    });

    it('nft delete chain inet wcf_agent prerouting', async () => {
      await expectRepaired(s, backend, (ns) => ns.exec('nft', ['delete', 'chain', 'inet', 'wcf_agent', 'prerouting']), /nft chain prerouting/);
    });

    it('nft monitor killed: the daemon restarts it, and a removal meanwhile is still put back', async () => {
      const d = await startDaemon(s);
      try {
        const monitorPid = async () => (await execa('pgrep', ['-P', String(d.pid), '-f', '(^nft monitor|xtables-monitor -e)'], { reject: false })).stdout.trim();
        const first = await waitFor(monitorPid, 'the nft monitor child', REPAIR_DEADLINE_MS);
        process.kill(Number(first), 'SIGKILL');
        await d.waitForLog(/nft monitor stopped/); // the event source, whichever program it is
        await s.ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
        await waitFor(() => hooked(s.ns, backend), 'the table to be back', REPAIR_DEADLINE_MS);
        await d.waitForLog(REPAIRED);
        const second = await waitFor(async () => {
          const pid = await monitorPid();
          return pid && pid !== first ? pid : undefined;
        }, 'a new nft monitor child', REPAIR_DEADLINE_MS);
        expect(second).not.toBe(first);
      } finally {
        await d.stop();
      }
    });

    it('watch_interval_seconds 0: no watching: no nft monitor child, and a removed table stays removed until a cycle', async () => {
      const off = join(s.cfgPath, '..', 'config-watch-off.json');
      writeFileSync(off, JSON.stringify({ ...(JSON.parse(readFileSync(s.cfgPath, 'utf8')) as object), watch_interval_seconds: 0 }), { mode: 0o600 });
      const stateFile = join(resolve(dirname(off), JSON.parse(readFileSync(off, 'utf8')).state_dir as string), 'state.json');
      const lastCycle = () => {
        try {
          return JSON.stringify((JSON.parse(readFileSync(stateFile, 'utf8')) as { lastCycle?: unknown }).lastCycle);
        } catch {
          return undefined;
        }
      };
      const before = lastCycle();
      const d = new DaemonProcess(off, { WCF_AGENT_MINUTE_MS: '60000' });
      try {
        await d.waitForLog(/sync failed/);
        // The failed cycle has ended (its record written): its re-assert of missing objects, which
        // runs beside the pull, is over, so it cannot answer the removal below.
        await waitFor(() => lastCycle() !== before, 'the failed cycle recorded', 10_000);
        expect(await hooked(s.ns, backend)).toBe(true); // restored at start
        // The monitor by its command line: a one-off nft the cycle runs (a kernel read) may be a child at this moment.
        expect((await execa('pgrep', ['-P', String(d.pid), '-f', '(^nft monitor|xtables-monitor -e)'], { reject: false })).stdout).toBe('');
        // Removed between cycles (the next is at least 15 s away: a failed cycle backs off half a
        // minute with jitter): a watcher would put it back within the deadline; none does.
        await s.ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
        const back = await waitFor(() => hooked(s.ns, backend), 'nothing', REPAIR_DEADLINE_MS).then(() => true, () => false);
        expect(back, `the table came back without a cycle: ${d.logs.map((l) => l.msg).join(' | ')}`).toBe(false);
        expect(d.count(/sync failed/), 'no cycle ran meanwhile').toBe(1);
        expect(d.count(REPAIRED)).toBe(0);
        expect(d.count(WATCHING)).toBe(0);
      } finally {
        await d.stop();
      }
    });

    it('changes to a foreign table cause no repair; the watcher still answers a removal after them', async () => {
      const d = await startDaemon(s);
      try {
        for (let i = 0; i < 20; i++) {
          await s.ns.exec('nft', ['add', 'table', 'inet', 'someone_else']);
          await s.ns.exec('nft', ['add', 'chain', 'inet', 'someone_else', 'c', '{ type filter hook input priority 0; }']);
          await s.ns.exec('nft', ['delete', 'table', 'inet', 'someone_else']);
        }
        // The removal below is heard after the foreign changes (events come in order): one repair, for it alone.
        await s.ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
        await d.waitForLog(REPAIRED);
        await waitFor(() => hooked(s.ns, backend), 'the table to be back', REPAIR_DEADLINE_MS);
        expect(d.count(REPAIRED)).toBe(1);
        expect(d.logs.find((l) => REPAIRED.test(l.msg))!.events).not.toEqual(expect.arrayContaining([expect.stringContaining('someone_else')]));
      } finally {
        await d.stop();
      }
    });

    it('two loops removing the table: the flapping guard engages, says so once, and the table comes back after', async () => {
      const d = await startDaemon(s);
      let racing = true;
      // Each loop waits for the table to be back, then removes it again: a fight with another manager.
      const loop = async () => {
        while (racing) {
          await waitFor(async () => !racing || (await hooked(s.ns, backend)), 'the table to be back', 120_000, 20);
          if (racing) await s.ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']).catch(() => undefined);
        }
      };
      try {
        const loops = [loop(), loop()];
        const loud = await d.waitForLog(/keeps removing the agent’s firewall objects/, 1, 60_000);
        expect((loud.missing as string[]).join(', ')).toMatch(/nft table inet wcf_agent/);
        expect(loud.level).toBe(50);
        // Said when a removal is first held back: the free repairs are used up, the table is gone for now.
        expect(d.count(REPAIRED)).toBe(3);
        racing = false;
        await Promise.all(loops);
        // Held back, not given up: the table returns once a repair is allowed again.
        await waitFor(() => hooked(s.ns, backend), 'the table to be back after the fight', 30_000);
        await d.waitForLog(REPAIRED, 4);
        expect(d.count(/keeps removing/)).toBe(1);
      } finally {
        racing = false;
        await d.stop();
      }
    });
  }

  if (backend === 'ipset') {
    it('iptables -F', async () => {
      await expectRepaired(s, backend, (ns) => ns.exec('iptables', ['-F']), /WCF-AGENT/, /^iptables \(pid \d+\)$/);
    });

    it('iptables -D INPUT <the hook rule>', async () => {
      await expectRepaired(s, backend, (ns) => ns.exec('iptables', ['-D', 'INPUT', '-m', 'comment', '--comment', 'wcf-agent', '-j', 'WCF-AGENT']), /hook INPUT -> WCF-AGENT/);
    });

    it('ipset destroy, after removing its references', async () => {
      // One process, so the references and the set go together (the watcher would put the rule back in between);
      // the kernel lets go of the set a moment after its rule is gone, as the agent's own flush allows for.
      await expectRepaired(
        s,
        backend,
        (ns) => ns.exec('sh', ['-c', 'iptables -F WCF-AGENT && for i in $(seq 50); do ipset destroy wcf-blocklist 2>/dev/null && exit 0; sleep 0.01; done; exit 1']),
        /ipset set wcf-blocklist/,
      );
    });

    it('ipset flush (the set emptied, everything else in place), noticed by the periodic check', async () => {
      await expectRepaired(s, backend, (ns) => ns.exec('ipset', ['flush', 'wcf-blocklist']), /^entries of the set$/);
    });

    it('iptables-restore of a file saved before the agent started', async () => {
      const file = join(s.cfgPath, '..', 'saved-before.rules');
      writeFileSync(file, s.savedBefore);
      await expectRepaired(s, backend, (ns) => ns.exec('iptables-restore', [file]), /WCF-AGENT/);
    });
  }
});
