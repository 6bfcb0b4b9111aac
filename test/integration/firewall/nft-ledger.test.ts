import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import { FULL_CHECK_MIN_MS } from '../../../src/firewall/nft/ledger.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { Netns, destroyAll } from '../../netns/netns.js';
import { fromNumber } from '../../../src/net/ipv4.js';
import { NET_DELETE_RUN_MS, netDeleteMs } from '../../../src/firewall/nft/write.js';
import { NAMES, fillers, options, sortedCidrs } from './common.js';
import { nftElements } from './kernel.js';

/**
 * What the nftables backend's record of its own writes (ledger.ts) promises, on real netfilter:
 * an apply that fails part-way makes the next one read the kernel back (the record no longer says
 * what the kernel holds), and a full read comes back periodically by the clock even when nothing
 * gave reason to doubt (the one way an address another process added to the set is noticed).
 */

/** A runner that makes the `n`-th write (`nft -f -`, counted from arm()) fail, once; records every command. */
function failing(inner: CommandRunner, scope = inner.scope) {
  let left = -1;
  const calls: string[] = [];
  /** The first line of each script written (`nft -f -`; not the checks, `nft -c -f -`). */
  const heads: string[] = [];
  const runner: CommandRunner = {
    // The record is per scope and table for the whole process: a scope of its own per test.
    scope,
    async run(file, args, o) {
      calls.push(`${file} ${args.join(' ')}`);
      if (args[0] === '-f' && o?.input !== undefined) heads.push(String(o.input).slice(0, 200).split('\n')[0]!);
      if (file === 'nft' && args[0] === '-f' && left > 0 && --left === 0) throw new FirewallError('command failed: nft -f -: injected failure', { command: 'nft -f -' });
      return inner.run(file, args, o);
    },
  };
  return { runner, calls, heads, arm: (n: number) => (left = n) };
}

const CAP = { capacity: 400_000 };

describe('nftables record of its own writes', () => {
  let ns: Netns;
  beforeAll(async () => {
    ns = await Netns.create();
  });
  afterAll(async () => {
    await destroyAll();
  });

  it('a write of more than 100,000 elements that fails in its third run: the deletions after it never ran, and the next apply reads the kernel and puts back what the failed one had removed', { timeout: 180_000 }, async () => {
    const f = failing(ns.runner());
    const plugin = new NftablesPlugin(options(f.runner));
    // E: 150,000 addresses, applied and recorded.
    const e = fillers(150_000, 86_400);
    await plugin.apply(e, CAP);
    // X: 1,000 others instead of E. Its runs: the additions, then E's deletion in three runs of
    // 50,000 (additions before deletions; at most 100,000 elements a run, each deletion written
    // twice with its guard): the third run, the second of deletions, fails.
    const k = fillers(1000, 86_400, 200_000);
    f.arm(3);
    await expect(plugin.apply(k, CAP)).rejects.toThrow(/injected failure/);
    const half = await nftElements(ns);
    // The additions are in; of E, the 50,000 of the second run are gone, the last 100,000 never deleted.
    for (const x of sortedCidrs(k)) expect(half.has(x)).toBe(true);
    expect(half.size).toBe(1000 + 100_000);
    // Y: E and X. The record still says E is there; only a read finds the 50,000 missing.
    f.calls.length = 0;
    const y: FirewallEntry[] = [...e, ...k];
    await plugin.apply(y, CAP);
    expect(f.calls.some((c) => c === `nft list set inet ${NAMES.tableName} ${NAMES.setName}`)).toBe(true);
    expect([...(await nftElements(ns)).keys()].sort()).toEqual(sortedCidrs(y).sort());
  });

  it('networks: a merge is one transaction and many deletions go in several short ones, never a refill (the kernel finds each network it deletes by walking its set)', { timeout: 120_000 }, async () => {
    await ns.exec('nft', ['flush', 'ruleset']);
    const f = failing(ns.runner(), `${ns.runner().scope ?? ''} networks`);
    const plugin = new NftablesPlugin(options(f.runner));
    const nets = (n: number, from: number): FirewallEntry[] => Array.from({ length: n }, (_, i) => ({ cidr: fromNumber(((20 << 24) + (from + i) * 256) >>> 0, 24), timeoutSeconds: 86_400 }));
    const held = nets(10_000, 0);
    await plugin.apply(held, CAP);
    f.heads.length = 0;
    // The first two /24s merged into the /23 covering both; the last 100 withdrawn.
    const want = [{ cidr: fromNumber(20 << 24, 23), timeoutSeconds: 86_400 }, ...held.slice(2, 9_900)];
    expect(await plugin.apply(want, CAP)).toMatchObject({ added: 1, removed: 102 });
    expect([...(await nftElements(ns)).keys()].sort()).toEqual(sortedCidrs(want).sort());
    expect(f.heads.filter((h) => h.startsWith('flush'))).toEqual([]);
    // Each run of deletions within its share of kernel time: more than one run for the 100.
    const perRun = Math.floor(NET_DELETE_RUN_MS / netDeleteMs(10_000));
    expect(perRun).toBeLessThan(100);
    expect(f.heads.length).toBe(1 + Math.ceil(100 / perRun));
  });

  it('a range another process put in the networks’ set is gone after the next read: the set is refilled (a delta cannot name a range)', async () => {
    await ns.exec('nft', ['flush', 'ruleset']);
    const f = failing(ns.runner(), `${ns.runner().scope ?? ''} range`);
    const plugin = new NftablesPlugin(options(f.runner));
    const want: FirewallEntry[] = [{ cidr: fromNumber(20 << 24, 24), timeoutSeconds: 86_400 }, ...fillers(50, 86_400)];
    await plugin.apply(want, CAP);
    const nets = `${NAMES.setName}-nets`;
    await ns.exec('nft', ['add', 'element', 'inet', NAMES.tableName, nets, '{ 198.51.100.3-198.51.100.9 . ipv4 }']);
    plugin.distrust('the test changed the set');
    f.heads.length = 0;
    await plugin.apply(want, CAP);
    expect(f.heads.filter((h) => h.startsWith(`flush set inet ${NAMES.tableName} ${nets}`))).toHaveLength(1);
    const listed = await ns.exec('nft', ['list', 'set', 'inet', NAMES.tableName, nets]);
    expect(listed).not.toContain('198.51.100.');
    expect(listed).toContain('20.0.0.0/24');
  });

  it('a full read by the clock, when nothing gave reason to doubt: an address another process added is removed then, not before', async () => {
    await ns.exec('nft', ['flush', 'ruleset']);
    let now = Date.now();
    const f = failing(ns.runner(), `${ns.runner().scope ?? ''} clock`);
    const plugin = new NftablesPlugin(options(f.runner, { now: () => now }));
    // Permanent entries: the clock moved by the test changes no timeout the record holds.
    const want = fillers(3000);
    await plugin.apply(want, CAP);
    // Written whole: trusted. Another process adds an address to the set behind the agent's back.
    await ns.exec('nft', ['add', 'element', 'inet', NAMES.tableName, NAMES.setName, '{ 203.0.113.9 }']);
    f.calls.length = 0;
    now += FULL_CHECK_MIN_MS - 60_000;
    expect(await plugin.apply(want, CAP)).toMatchObject({ mode: 'none' });
    expect(f.calls.filter((c) => / list /.test(c) && c !== 'nft -j list chains')).toEqual([]);
    expect((await nftElements(ns)).has('203.0.113.9')).toBe(true);
    // Past the interval (an hour at this size): the set is read whole and put back exactly.
    now += 120_000;
    await plugin.apply(want, CAP);
    expect(f.calls.some((c) => c === `nft list set inet ${NAMES.tableName} ${NAMES.setName}`)).toBe(true);
    expect((await nftElements(ns)).has('203.0.113.9')).toBe(false);
    expect((await nftElements(ns)).size).toBe(3000);
  });
});
