import { execa } from 'execa';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppliedMemory } from '../../../src/agent/state/applied-memory.js';
import { Watcher } from '../../../src/agent/daemon/watcher.js';
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
 * (possibly million-element) set back: these tests change the set behind its
 * back, with the firewall watcher listening and while its event source is
 * down, and check that the next apply ends with exactly the selection; and
 * that an apply with nothing changed sends nothing and lists nothing.
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

describe('nftables: the last applied record stands for the kernel until something else touches it', () => {
  let ns: Netns;
  let runner: ReturnType<typeof recording>;
  let plugin: FirewallPlugin;
  let watcher: Watcher;
  const distrusted: string[] = [];
  // A few thousand entries: addresses with timeouts, a few networks.
  const t0 = Date.now();
  const sel = () => at(selection, t0);
  const selection: FirewallEntry[] = [...fillers(3000, 3600), { cidr: net('192.0.2.0/24'), timeoutSeconds: 7200 }, { cidr: net('198.51.100.0/25') }];

  beforeAll(async () => {
    ns = await Netns.create();
    runner = recording(ns.runner());
    const memory = new AppliedMemory();
    const raw = new NftablesPlugin(options(runner));
    plugin = memory.wrap({ ...raw, name: raw.name, apply: (e, o) => raw.apply(e, o), flush: () => raw.flush(), list: () => raw.list(), readCounters: () => raw.readCounters(), readHits: () => raw.readHits(), objects: () => raw.objects(), check: () => raw.check(), distrust: (why) => {
      distrusted.push(why);
      raw.distrust(why);
    } });
    await plugin.apply(sel(), CAP);
    watcher = new Watcher({
      plugin,
      memory,
      names: NAMES,
      netns: ns.name,
      intervalSeconds: 1,
      logger: pino({ level: 'silent' }),
      serial: (fn) => fn(),
      locked: (fn) => fn(),
      onRepair: () => undefined,
      protect: async (e) => e,
    });
    watcher.start();
    await untilHeard();
    // The probe element goes again, and the record is trusted from here on.
    await plugin.apply(sel(), CAP);
    distrusted.length = 0;
  });
  afterAll(async () => {
    await watcher?.stop();
    await destroyAll();
  });

  /**
   * Another process's change, repeated until the watcher hears one: its monitor
   * has subscribed (a loaded machine can take seconds), and every event sent
   * before this one has been handled (the kernel sends them in order).
   */
  async function untilHeard(clear = true): Promise<number[]> {
    const deadline = Date.now() + 30_000;
    const probes: number[] = [];
    for (let i = 0; ; i++) {
      if (clear) distrusted.length = 0;
      const heard = distrusted.length;
      // `ip netns exec` runs nft in its own process: the pid the watcher names is this one.
      const nft = execa('ip', ['netns', 'exec', ns.name, 'nft', 'add', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ 203.0.113.${200 + (i % 50)} }`]);
      probes.push(nft.pid!);
      await nft;
      if (await waitFor(async () => distrusted.length > heard, 1000, 50)) return probes;
      if (Date.now() > deadline) throw new Error('the watcher never heard another process change the set');
    }
  }

  it('an apply with nothing changed sends no transaction and reads no set', async () => {
    runner.calls.length = 0;
    expect(await plugin.apply(sel(), CAP)).toMatchObject({ mode: 'none', added: 0, removed: 0, updated: 0 });
    // Only the quick check (nft -c, in check mode): no `nft -f` of the set, no listing.
    expect(runner.calls.every((c) => c.startsWith('nft -c -f -'))).toBe(true);
    expect(runner.calls.filter((c) => / list /.test(c))).toEqual([]);
  });

  it('elements added, deleted and flushed by another process while the watcher listens: the next apply reads the set and converges', async () => {
    for (const change of [
      ['add', 'element', 'inet', NAMES.tableName, NAMES.setName, '{ 203.0.113.66 }'],
      ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${selection[5]!.cidr.text} }`],
      ['flush', 'set', 'inet', NAMES.tableName, NAMES.setName],
    ]) {
      distrusted.length = 0;
      await ns.exec('nft', change);
      // The watcher hears another process's transaction (not the agent's own) and says so.
      expect(await waitFor(async () => distrusted.length > 0, 10_000), 'the watcher heard the change').toBe(true);
      expect(distrusted[0]).toMatch(/changed by nft/);
      runner.calls.length = 0;
      await plugin.apply(sel(), CAP);
      expect(runner.calls.some((c) => c.includes(`list set inet ${NAMES.tableName} ${NAMES.setName}`))).toBe(true);
      expect(await kernelNow(ns)).toEqual(sortedCidrs(selection).sort());
      // Trusted again: nothing to send.
      expect(await plugin.apply(sel(), CAP)).toMatchObject({ mode: 'none' });
    }
  });

  it('the agent’s own applies do not make it doubt its record', async () => {
    distrusted.length = 0;
    const nextBase = [...selection.slice(10), ...fillers(10, 600, 50_000)];
    const next = () => at(nextBase, t0);
    expect(await plugin.apply(next(), CAP)).toMatchObject({ mode: 'delta', added: 10, removed: 10 });
    // Another process's change after it: once that is heard, the events of the agent's own
    // transaction (sent before it) have been handled, and only the other process was doubted.
    const probes = await untilHeard(false);
    expect(distrusted.length).toBeGreaterThan(0);
    for (const why of distrusted) expect(probes.map((pid) => `changed by nft (pid ${pid})`)).toContain(why);
    await plugin.apply(next(), CAP);
    runner.calls.length = 0;
    expect(await plugin.apply(next(), CAP)).toMatchObject({ mode: 'none' });
    expect(runner.calls.filter((c) => / list /.test(c))).toEqual([]);
    await plugin.apply(sel(), CAP);
  });

  it('a large write runs with the event source paused: a new source listens afterwards, the write is not doubted, and another process is heard again', async () => {
    const monitors = async () => {
      const { stdout } = await execa('pgrep', ['-P', String(process.pid), '-f', 'xtables-monitor -e|nft monitor'], { reject: false });
      return stdout.split('\n').filter(Boolean);
    };
    const before = await monitors();
    expect(before).toHaveLength(1);
    distrusted.length = 0;
    // More elements than PAUSE_EVENTS_AT in one apply: the source is ended for it and started again.
    const big = [...selection, ...fillers(PAUSE_EVENTS_AT, 900, 100_000)];
    expect(await plugin.apply(at(big, t0), CAP)).toMatchObject({ added: PAUSE_EVENTS_AT });
    expect(await waitFor(async () => {
      const now = await monitors();
      return now.length === 1 && now[0] !== before[0];
    }, 10_000), 'a new event source after the write').toBe(true);
    const probes = await untilHeard(false);
    for (const why of distrusted) expect(probes.map((pid) => `changed by nft (pid ${pid})`)).toContain(why);
    await plugin.apply(sel(), CAP);
    expect(await kernelNow(ns)).toEqual(sortedCidrs(selection).sort());
  });

  it('elements changed while the event source is down: its restart is distrusted, and the next apply converges', async () => {
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
    distrusted.length = 0;
    process.kill(mine[0]!, 'SIGKILL');
    await ns.exec('nft', ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${selection[7]!.cidr.text} }`]);
    await ns.exec('nft', ['add', 'element', 'inet', NAMES.tableName, `${NAMES.setName}-net`, '{ 203.0.113.128/26 }']);
    expect(await waitFor(async () => distrusted.some((d) => /restarted/.test(d)), 15_000), 'the restart was distrusted').toBe(true);
    await plugin.apply(sel(), CAP);
    expect(await kernelNow(ns)).toEqual(sortedCidrs(selection).sort());
  });
});
