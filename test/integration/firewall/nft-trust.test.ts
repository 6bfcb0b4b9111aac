import { execa } from 'execa';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AppliedMemory } from '../../../src/agent/state/applied-memory.js';
import { Watcher } from '../../../src/agent/daemon/watcher.js';
import { KernelTruth } from '../../../src/agent/daemon/kernel-truth.js';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import type { FirewallPlugin } from '../../../src/firewall/plugin.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { Netns, destroyAll, waitFor } from '../../netns/netns.js';
import { ownActivityWithin } from '../../../src/exec/children.js';
import { CAP, NAMES, fillers, net, options, sortedCidrs } from './common.js';
import { nftElements } from './kernel.js';
import { PAUSE_EVENTS_AT } from '../../../src/firewall/nft/write.js';

/**
 * The nftables backend trusts what it last applied instead of reading a
 * (possibly million-element) set back, and the watcher checks the entries
 * themselves when something may have changed them. These tests change the set
 * behind the agent's back (with the watcher listening, in a transaction that
 * also touches another table, while its event source is down) and check that
 * the watcher alone puts exactly the selection back within seconds, without
 * reading the set of addresses; that an apply with nothing changed sends
 * nothing and lists nothing; and that the agent's own writes cost no check.
 */

/** A runner that records each nft command (with its stdin's first line) and passes it on. */
function recording(inner: CommandRunner): CommandRunner & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    scope: inner.scope,
    run(file, args, o) {
      const input = o?.input === undefined ? '' : ` <${String(o.input).split('\n', 1)[0]}`;
      calls.push(`${file} ${args.join(' ')}${input}`);
      return inner.run(file, args, o);
    },
  };
}

/** The entries with their timeouts counted down since `t0`, as the daemon gives them (from fixed expiry times). */
function at(list: readonly FirewallEntry[], t0: number): FirewallEntry[] {
  const gone = Math.floor((Date.now() - t0) / 1000);
  return list.map((e) => (e.timeoutSeconds === undefined ? e : { ...e, timeoutSeconds: e.timeoutSeconds - gone }));
}

const kernelNow = async (ns: Netns) => [...(await nftElements(ns)).keys()].sort();
/** A check-mode verification of the addresses (see src/firewall/nft/verify.ts). */
const isVerification = (c: string) => c.startsWith('nft -c -f - <delete element');

describe('nftables: the watcher notices changes to the agent’s elements and puts them back', () => {
  let ns: Netns;
  let runner: ReturnType<typeof recording>;
  let plugin: FirewallPlugin;
  let watcher: Watcher;
  let truth: KernelTruth;
  const repairs: string[][] = [];
  // A few thousand entries: addresses with timeouts, a few networks.
  const t0 = Date.now();
  const sel = () => at(selection, t0);
  const selection: FirewallEntry[] = [...fillers(3000, 3600), { cidr: net('192.0.2.0/24'), timeoutSeconds: 7200 }, { cidr: net('198.51.100.0/25') }];
  const want = sortedCidrs(selection).sort();

  let memory: AppliedMemory;
  beforeAll(async () => {
    ns = await Netns.create();
    runner = recording(ns.runner());
    memory = new AppliedMemory();
    plugin = memory.wrap(new NftablesPlugin(options(runner)));
    await plugin.apply(sel(), CAP);
  });
  // A watcher of its own for each test: the flapping guard of one (repairs spaced out after a
  // few in a row, as when two firewall managers fight) must not hold back the next test's.
  beforeEach(async () => {
    truth = new KernelTruth();
    watcher = new Watcher({
      plugin,
      memory,
      names: NAMES,
      netns: ns.name,
      intervalSeconds: 1,
      logger: pino({ level: process.env.WCF_TEST_LOG ?? 'silent' }),
      serial: (fn) => fn(),
      locked: (fn) => fn(),
      onRepair: (objects) => void repairs.push([...objects]),
      protect: async (e) => e,
      truth,
    });
    watcher.start();
    // The start is suspect (nothing listened before it): one verification finds everything held.
    expect(await waitFor(async () => truth.get().state === 'held', 20_000), 'the first verification').toBe(true);
  });
  afterEach(async () => {
    await watcher.stop();
  });
  afterAll(async () => {
    await destroyAll();
  });

  /** Until the watcher has repaired once more than `before` times and the kernel holds the selection. */
  const repairedBack = async (before: number) =>
    waitFor(async () => repairs.length > before && JSON.stringify(await kernelNow(ns)) === JSON.stringify(want), 10_000, 50);

  it('an apply with nothing changed sends no transaction and reads no set', async () => {
    runner.calls.length = 0;
    expect(await plugin.apply(sel(), CAP)).toMatchObject({ mode: 'none', added: 0, removed: 0, updated: 0 });
    // Only the quick check (nft -c, in check mode, and the listing of chains, which reads no element): no `nft -f` of the set, no other listing.
    expect(runner.calls.every((c) => c.startsWith('nft -c -f -') || c === 'nft -j list chains')).toBe(true);
    expect(runner.calls.filter((c) => / list /.test(c) && c !== 'nft -j list chains')).toEqual([]);
  });

  it('an element deleted, and the set flushed, by another process: put back by the watcher within seconds, the addresses never listed', async () => {
    // Three removals in a row: the most the flapping guard lets through at once.
    for (const change of [
      ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${selection[5]!.cidr.text} }`],
      ['flush', 'set', 'inet', NAMES.tableName, NAMES.setName],
      ['flush', 'set', 'inet', NAMES.tableName, `${NAMES.setName}-nets`],
    ]) {
      const before = repairs.length;
      runner.calls.length = 0;
      await ns.exec('nft', change);
      expect(await repairedBack(before), `put back after: nft ${change.join(' ')}`).toBe(true);
      // Said held again only after a verification that began after the repair.
      expect(await waitFor(async () => truth.get().state === 'held', 10_000, 50), 'held after the repair’s verification').toBe(true);
      // Checked in check mode, never read back whole.
      expect(runner.calls.some(isVerification)).toBe(true);
      expect(runner.calls.filter((c) => c.includes(`list set inet ${NAMES.tableName} ${NAMES.setName} `) || c.endsWith(`list set inet ${NAMES.tableName} ${NAMES.setName}`))).toEqual([]);
      expect(runner.calls.filter((c) => / list table /.test(c))).toEqual([]);
    }
  });

  it('a deletion in the same transaction as a change to another table (which the event source does name) is put back too', async () => {
    await ns.exec('nft', ['add', 'table', 'inet', 'other']);
    const before = repairs.length;
    await ns.exec('nft', ['-f', '-'], `add chain inet other d\ndelete element inet ${NAMES.tableName} ${NAMES.setName} { ${selection[9]!.cidr.text} }\n`);
    expect(await repairedBack(before), 'put back').toBe(true);
  });

  /** Whether a verification runs within `ms` (an absence is asserted by a poll that times out). */
  const verifiedWithin = (ms: number) => waitFor(async () => runner.calls.some(isVerification), ms, 50);

  it('the agent’s own applies cost no verification; another process’s next one does', async () => {
    const nextBase = [...selection.slice(10), ...fillers(10, 600, 50_000)];
    runner.calls.length = 0;
    expect(await plugin.apply(at(nextBase, t0), CAP)).toMatchObject({ mode: 'delta', added: 10, removed: 10 });
    // The event of the agent's own transaction arrives within milliseconds; the watcher acts 100 ms later.
    expect(await verifiedWithin(1500), 'a verification after the agent’s own apply').toBe(false);
    const before = repairs.length;
    await ns.exec('nft', ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${selection[20]!.cidr.text} }`]);
    expect(await waitFor(async () => repairs.length > before, 10_000), 'put back').toBe(true);
    await plugin.apply(sel(), CAP);
    expect(await kernelNow(ns)).toEqual(want);
  });

  it('a transaction by an iptables tool (which cannot write an inet table’s sets) costs no verification', async () => {
    runner.calls.length = 0;
    await ns.exec('iptables', ['-A', 'INPUT', '-s', '192.0.2.77', '-j', 'ACCEPT']);
    expect(await verifiedWithin(1500), 'a verification after iptables').toBe(false);
    // The same change by nft is verified (the source heard it as it heard iptables').
    await ns.exec('nft', ['add', 'rule', 'ip', 'filter', 'INPUT', 'ip', 'saddr', '192.0.2.78', 'accept']);
    expect(await verifiedWithin(10_000), 'a verification after nft').toBe(true);
  });

  it('a large write runs with the event source paused: a new source listens afterwards, and the gap is verified', async () => {
    const monitors = async () => {
      const { stdout } = await execa('pgrep', ['-P', String(process.pid), '-f', 'xtables-monitor -e|nft monitor'], { reject: false });
      return stdout.split('\n').filter(Boolean);
    };
    const before = await monitors();
    expect(before).toHaveLength(1);
    // More elements than PAUSE_EVENTS_AT in one apply: the source is ended for it and started again.
    const big = [...selection, ...fillers(PAUSE_EVENTS_AT, 900, 100_000)];
    runner.calls.length = 0;
    expect(await plugin.apply(at(big, t0), CAP)).toMatchObject({ added: PAUSE_EVENTS_AT });
    expect(await waitFor(async () => {
      const now = await monitors();
      return now.length === 1 && now[0] !== before[0];
    }, 10_000), 'a new event source after the write').toBe(true);
    // Whatever another process did while nothing listened is looked for.
    expect(await waitFor(async () => runner.calls.filter(isVerification).length > 0, 10_000), 'the gap verified').toBe(true);
    await plugin.apply(sel(), CAP);
    expect(await kernelNow(ns)).toEqual(want);
  });

  it('an element deleted while the event source is down: put back without any event', async () => {
    const { stdout } = await execa('pgrep', ['-f', `netns exec ${ns.name} .*(xtables-monitor|nft monitor)|xtables-monitor -e|nft monitor`], { reject: false });
    const pids = stdout.split('\n').filter(Boolean).map(Number);
    // The monitor runs as the test process's child (same process id through setpriv, ip netns exec and stdbuf).
    const mine = [];
    for (const pid of pids) {
      const ppid = Number((await execa('ps', ['-o', 'ppid=', '-p', String(pid)], { reject: false })).stdout.trim());
      if (ppid === process.pid) mine.push(pid);
    }
    expect(mine.length).toBe(1);
    // Not right after one of the agent's own commands (a death then is taken as an overflow on its own events).
    expect(await waitFor(async () => !ownActivityWithin(2500), 10_000)).toBe(true);
    const before = repairs.length;
    process.kill(mine[0]!, 'SIGKILL');
    await ns.exec('nft', ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${selection[7]!.cidr.text} }`]);
    expect(await repairedBack(before), 'put back').toBe(true);
  });
});
