import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { kernelColumns, type KernelEntry } from '../../../src/firewall/entries.js';
import type { EntryColumns } from '../../../src/firewall/entry-columns.js';
import { splitNetsDelta } from '../../../src/firewall/nft/reshape.js';
import type { NftLayout } from '../../../src/firewall/nft/text.js';
import { NET_DELETE_RUN_MS, netDeleteMs, NFT_CHUNK, netsChange, transactions, type NftRun, type SetChange } from '../../../src/firewall/nft/write.js';
import { fromNumber, toCidr, type Cidr } from '../../../src/net/ipv4.js';

const layout: NftLayout = { table: 'wcf_agent', set: 'wcf-blocklist', nets: 'wcf-blocklist-nets', drops: 'wcf-blocklist-drops', hooks: ['input'], priority: -5, stage: 'filter' as const, inbound: 'all' as const, forwardedOut: true, action: 'DROP', logBlocked: false, direction: 'inbound' };
const cols = (cidrs: readonly Cidr[], timeout?: number): EntryColumns => kernelColumns(cidrs.map((cidr): KernelEntry => ({ cidr, timeout })), cidrs.length);
const nets = (...texts: string[]) => cols(texts.map((t) => toCidr(t)!));
const texts = (c: EntryColumns) => Array.from({ length: c.length }, (_, i) => fromNumber(c.starts[i]!, c.prefixes[i]!).text).sort();

/**
 * The kernel as the agent's writes meet it, enough to replay the scripts: a transaction is
 * all or nothing; the networks' set refuses an added interval that overlaps another one still
 * in it (not one deleted earlier in the same transaction), takes an identical one as a no-op,
 * and refuses to delete what it does not hold; the addresses' set likewise, without intervals.
 */
class Kernel {
  readonly sets = new Map<string, Map<string, Cidr>>([[layout.set, new Map()], [layout.nets, new Map()]]);

  /** Applies one run; throws (changing nothing) where nft would fail. */
  run(script: string): void {
    const next = new Map([...this.sets].map(([k, v]) => [k, new Map(v)]));
    let set = '';
    let mode: 'add' | 'delete' | undefined;
    for (const raw of script.split('\n')) {
      const line = raw.trim();
      let m: RegExpExecArray | null;
      if ((m = /^flush set inet \S+ (\S+)$/.exec(line))) next.get(m[1]!)!.clear();
      else if ((m = /^set (\S+) \{$/.exec(line))) set = m[1]!;
      else if (line === 'elements = {') mode = 'add';
      else if ((m = /^delete element inet \S+ (\S+) \{$/.exec(line))) [set, mode] = [m[1]!, 'delete'];
      else if (line === '}') mode = undefined;
      else if (mode && (m = /^([^\s,]+)(?: \. ipv4)?(?: timeout \d+s)?,?$/.exec(line))) {
        const c = toCidr(m[1]!)!;
        const held = next.get(set)!;
        if (mode === 'delete') {
          if (!held.delete(c.text)) throw new Error(`delete of ${c.text}: not in ${set}`);
        } else if (!held.has(c.text)) {
          const clash = [...held.values()].find((o) => o.start <= c.end && c.start <= o.end);
          if (clash) throw new Error(`add of ${c.text}: overlaps ${clash.text} in ${set}`);
          held.set(c.text, c);
        }
      }
    }
    for (const [k, v] of next) this.sets.set(k, v);
  }

  covers(address: number): boolean {
    return [...this.sets.values()].some((s) => [...s.values()].some((c) => c.start <= address && address <= c.end));
  }
}

/** Networks free of overlaps among themselves (the set holds no overlaps), from arbitrary ones. */
const disjoint = (list: readonly Cidr[]) => list.filter((d, i) => list.every((o, j) => j >= i || o.end < d.start || o.start > d.end));
// Within 10.0.0.0/23, so that networks, their pieces and the addresses inside them meet often.
const cidrArb = fc.tuple(fc.integer({ min: 0, max: 127 }), fc.integer({ min: 23, max: 32 })).map(([n, p]) => fromNumber(0x0a000000 + n * 4, p));

describe('splitNetsDelta', () => {
  it('keeps a network split around a narrower one, or pieces merged back, in one group; the rest apart', () => {
    const split = splitNetsDelta(nets('192.0.2.0/30', '192.0.2.7', '198.51.100.0/24'), nets('192.0.2.0/24', '203.0.113.0/24'));
    expect(texts(split.add)).toEqual(['198.51.100.0/24']);
    expect(texts(split.del)).toEqual(['203.0.113.0/24']);
    expect(split.groups.map((g) => [texts(g.add), texts(g.del)])).toEqual([[['192.0.2.0/30', '192.0.2.7'], ['192.0.2.0/24']]]);
    const merged = splitNetsDelta(nets('10.0.0.0/23'), nets('10.0.0.0/24', '10.0.1.0/24', '10.0.2.0/24'));
    expect(merged.groups.map((g) => [texts(g.add), texts(g.del)])).toEqual([[['10.0.0.0/23'], ['10.0.0.0/24', '10.0.1.0/24']]]);
    expect(texts(merged.del)).toEqual(['10.0.2.0/24']);
  });

  it('places every network once, and every overlapping pair in the same group', () => {
    fc.assert(
      fc.property(fc.array(cidrArb, { maxLength: 12 }), fc.array(cidrArb, { maxLength: 12 }), (a, d) => {
        const [adds, dels] = [disjoint(a), disjoint(d)];
        const s = splitNetsDelta(cols(adds), cols(dels));
        const groupOf = new Map<string, number>();
        s.groups.forEach((g, k) => [...texts(g.add).map((t) => `+${t}`), ...texts(g.del).map((t) => `-${t}`)].forEach((t) => groupOf.set(t, k)));
        expect([...texts(s.add), ...s.groups.flatMap((g) => texts(g.add))].sort()).toEqual(adds.map((c) => c.text).sort());
        expect([...texts(s.del), ...s.groups.flatMap((g) => texts(g.del))].sort()).toEqual(dels.map((c) => c.text).sort());
        for (const x of adds) for (const y of dels) {
          if (x.start <= y.end && y.start <= x.end) {
            expect(groupOf.get(`+${x.text}`)).toBeDefined();
            expect(groupOf.get(`+${x.text}`)).toBe(groupOf.get(`-${y.text}`));
          }
        }
      }),
    );
  });
});

/** The change from `before` to `after` of both sets, as an apply computes it (exact CIDRs). */
function changesOf(before: readonly Cidr[], after: readonly Cidr[], held: number, mustRefill: boolean): SetChange[] {
  const has = (list: readonly Cidr[], c: Cidr) => list.some((o) => o.text === c.text);
  const part = (list: readonly Cidr[], hosts: boolean) => list.filter((c) => (c.prefix === 32) === hosts);
  const out: SetChange[] = [];
  for (const hosts of [true, false]) {
    const [b, a] = [part(before, hosts), part(after, hosts)];
    const add = cols(a.filter((c) => !has(b, c)), 600);
    const del = cols(b.filter((c) => !has(a, c)));
    out.push(hosts ? { set: layout.set, add, del } : netsChange(layout.nets, add, del, cols(a, 600), held, mustRefill));
  }
  return out;
}

describe('transactions', () => {
  it('never unblocks an address wanted before and after, whatever the runs; ends with exactly what is wanted', () => {
    fc.assert(
      fc.property(fc.array(cidrArb, { maxLength: 14 }), fc.array(cidrArb, { maxLength: 14 }), fc.constantFrom(0, 10_000, 5_000_000), fc.boolean(), (b, a, held, refill) => {
        // Networks disjoint among themselves (as the set holds them); addresses sit in their own set.
        const shape = (l: readonly Cidr[]) => [...new Map(l.filter((c) => c.prefix === 32).map((c) => [c.text, c])).values(), ...disjoint(l.filter((c) => c.prefix < 32))];
        const [before, after] = [shape(b), shape(a)];
        const kernel = new Kernel();
        for (const c of before) kernel.sets.get(c.prefix === 32 ? layout.set : layout.nets)!.set(c.text, c);
        const both = [...before, ...after].flatMap((c) => [c.start, c.end]).filter((x) => before.some((c) => c.start <= x && x <= c.end) && after.some((c) => c.start <= x && x <= c.end));
        for (const run of transactions(layout, changesOf(before, after, held, refill), held)) {
          kernel.run(run.script.toString());
          for (const x of both) expect(kernel.covers(x), `address ${x} unblocked between runs`).toBe(true);
        }
        expect([...kernel.sets.values()].flatMap((s) => [...s.keys()]).sort()).toEqual(after.map((c) => c.text).sort());
      }),
      { numRuns: 400 },
    );
  });

  it('deletes networks in runs of bounded kernel time, but never splits a reshaped network', () => {
    const held = 150_000;
    const each = netDeleteMs(held);
    const del = cols(Array.from({ length: 100 }, (_, i) => fromNumber(0x0a000000 + i * 256, 24)));
    // One /16 replacing 256 /24s is one group, however long its deletions take.
    const wide = cols(Array.from({ length: 256 }, (_, i) => fromNumber(0x0b000000 + i * 256, 24)));
    const all = cols([...texts(del), ...texts(wide)].map((t) => toCidr(t)!));
    const runs: NftRun[] = [...transactions(layout, [{ set: layout.nets, add: nets('11.0.0.0/16'), del: all }], held)];
    const group = runs.filter((r) => r.script.includes('11.0.0.0/16'));
    expect(group).toHaveLength(1);
    expect(group[0]!.script.toString().match(/^\t11\.0\.\d+\.0\/24 \. ipv4,?$/gm)).toHaveLength(256);
    const plain = runs.filter((r) => !r.script.includes('11.0.0.0/16'));
    expect(plain.length).toBeGreaterThan(1);
    for (const r of plain) expect(r.slowMs).toBeLessThanOrEqual(Math.max(NET_DELETE_RUN_MS, each));
    expect(plain.reduce((n, r) => n + r.elements, 0)).toBe(100);
    // Without networks held, the same deletions are one run: its cost is the elements'.
    expect([...transactions(layout, [{ set: layout.nets, add: nets(), del }], 0)]).toHaveLength(1);
  });

  it('splits a large change into runs within NFT_CHUNK, additions before the deletions', () => {
    const n = 40_000; // networks weigh 3: more than one run
    const add = cols(Array.from({ length: n }, (_, i) => fromNumber(0x0c000000 + i * 256, 24)), 600);
    const del = cols(Array.from({ length: 1_000 }, (_, i) => fromNumber(0x0d000000 + i * 256, 24)));
    const runs = [...transactions(layout, [{ set: layout.nets, add, del }], 0)];
    expect(runs.length).toBeGreaterThan(1);
    for (const r of runs) expect(r.elements).toBeLessThanOrEqual(NFT_CHUNK);
    const firstDelete = runs.findIndex((r) => r.script.includes('delete element'));
    const lastAdd = runs.findLastIndex((r) => r.script.includes('12.'));
    expect(firstDelete).toBeGreaterThanOrEqual(lastAdd);
    expect(runs.reduce((k, r) => k + r.elements, 0)).toBe(n + 1_000);
  });

  it('refills the networks’ set only when it must, or when deleting would cost the kernel far more', () => {
    const wanted = nets('10.0.0.0/24');
    const del = cols(Array.from({ length: 7_000 }, (_, i) => fromNumber(0x0a010000 + i * 256, 24)));
    expect(netsChange(layout.nets, nets(), nets('10.9.0.0/24'), wanted, 150_000).refill).toBeUndefined();
    expect(netsChange(layout.nets, nets(), nets('10.9.0.0/24'), wanted, 150_000, true).refill).toBe(wanted);
    expect(netsChange(layout.nets, nets(), del, wanted, 150_000).refill).toBe(wanted);
    expect(netsChange(layout.nets, nets(), cols(texts(del).slice(0, 300).map((t) => toCidr(t)!)), wanted, 10_000).refill).toBeUndefined();
    const [run, ...rest] = [...transactions(layout, [netsChange(layout.nets, nets(), del, wanted, 150_000)], 150_000)];
    expect(rest).toHaveLength(0);
    expect(run!.script.toString()).toMatch(/^flush set inet wcf_agent wcf-blocklist-nets\n/);
    expect(run!.slowMs).toBeGreaterThan(60_000);
  });
});
