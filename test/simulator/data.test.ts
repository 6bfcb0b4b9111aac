import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DAY, IndicatorData } from './data.js';
import { EXCLUDED_RANGES, Permutation, formatAddress, parseAddress, parseIp } from './ipspace.js';
import { isoSeconds } from './render.js';

const START = 1_795_000_000;

function overlapsExcluded(addr: number, prefix: number): boolean {
  const end = addr + 2 ** (32 - prefix);
  return EXCLUDED_RANGES.some(([a, p]) => {
    const s = parseAddress(a)!;
    return addr < s + 2 ** (32 - p) && s < end;
  });
}

describe('Permutation', () => {
  it('is a bijection with a working inverse', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer(), (size, key) => {
        const p = new Permutation(size, key);
        const seen = new Set<number>();
        for (let x = 0; x < size; x++) {
          const y = p.forward(x);
          expect(y).toBeGreaterThanOrEqual(0);
          expect(y).toBeLessThan(size);
          expect(p.inverse(y)).toBe(x);
          seen.add(y);
        }
        expect(seen.size).toBe(size);
      }),
      { numRuns: 30 },
    );
  });
});

describe('parseIp', () => {
  it('accepts strict addresses and aligned networks', () => {
    expect(parseIp('203.0.113.7')).toEqual({ addr: parseAddress('203.0.113.7'), prefix: 32, key: '203.0.113.7' });
    expect(parseIp('203.0.113.0/24')?.key).toBe('203.0.113.0/24');
    expect(parseIp('203.0.113.7/32')?.key).toBe('203.0.113.7');
    expect(parseIp('0.0.0.0/0')?.prefix).toBe(0);
  });
  it.each(['', '1.2.3', '1.2.3.4.5', '01.2.3.4', '256.1.1.1', '1.2.3.4/33', '1.2.3.4/24', '1.2.3.0/024', ' 1.2.3.4', '1.2.3.-1', 'a.b.c.d'])(
    'rejects %j',
    (s) => expect(parseIp(s)).toBeNull(),
  );
});

describe('isoSeconds', () => {
  it('matches Date#toISOString', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000 }), (ts) => {
        expect(isoSeconds(ts)).toBe(new Date(ts * 1000).toISOString());
      }),
    );
  });
});

describe('IndicatorData', () => {
  const N = 20_000;
  const d = new IndicatorData({ seed: 42, count: N, start: START });

  it('has unique ips outside the excluded ranges, ~15% networks /16../31', () => {
    const ips = new Set<string>();
    let nets = 0;
    for (let i = 0; i < N; i++) {
      const ip = d.ipAt(i);
      ips.add(ip);
      const p = parseIp(ip);
      expect(p, ip).not.toBeNull();
      expect(p!.key).toBe(ip);
      expect(d.isNetwork(i)).toBe(p!.prefix < 32);
      if (p!.prefix < 32) {
        nets++;
        expect(p!.prefix).toBeGreaterThanOrEqual(16);
        expect(p!.prefix).toBeLessThanOrEqual(31);
      }
      expect(overlapsExcluded(p!.addr, p!.prefix), ip).toBe(false);
    }
    expect(ips.size).toBe(N);
    expect(nets / N).toBeGreaterThan(0.12);
    expect(nets / N).toBeLessThan(0.18);
  });

  it('maps every ip back to its index', () => {
    for (let i = 0; i < N; i++) {
      const p = parseIp(d.ipAt(i))!;
      expect(d.indexOf(p.addr, p.prefix)).toBe(i);
    }
    expect(d.indexOf(parseAddress('127.0.0.1')!, 32)).toBe(-1);
    const big = new IndicatorData({ seed: 9, count: 1_000_000, start: START });
    for (const i of [0, 1, 499_999, 999_998, 999_999]) {
      const p = parseIp(big.ipAt(i))!;
      expect(big.indexOf(p.addr, p.prefix)).toBe(i);
    }
  });

  it('orders ts non-decreasing within the last 10 days, entry_ts <= ts', () => {
    let prev = -Infinity;
    for (let i = 0; i < N; i++) {
      const ts = d.tsAt(i);
      expect(ts).toBeGreaterThanOrEqual(prev);
      expect(d.entryTsAt(i)).toBeLessThanOrEqual(ts);
      prev = ts;
    }
    expect(d.tsAt(0)).toBeGreaterThanOrEqual(START - 10 * DAY);
    expect(d.tsAt(N - 1)).toBeLessThan(START);
    expect(d.lowerBound(d.tsAt(5000))).toBeLessThanOrEqual(5000);
    expect(d.tsAt(d.lowerBound(d.tsAt(5000)))).toBe(d.tsAt(5000));
  });

  it('has the planned same-ts runs, exactly', () => {
    expect(d.sameTsRuns.map((r) => r.count)).toEqual([7, 7, 7, 1500]);
    for (const run of d.sameTsRuns) {
      let n = 0;
      for (let i = 0; i < N; i++) if (d.tsAt(i) === run.ts) n++;
      expect(n).toBe(run.count);
      expect(d.tsAt(run.startIndex)).toBe(run.ts);
      expect(d.tsAt(run.startIndex - 1)).toBeLessThan(run.ts);
    }
    expect(new IndicatorData({ seed: 1, count: 4999, start: START }).sameTsRuns.every((r) => r.count < 1000)).toBe(true);
    expect(new IndicatorData({ seed: 1, count: 8, start: START }).sameTsRuns).toEqual([]);
  });

  it('batchImport: false leaves out the 1500-item run (the demo), keeps the small ones', () => {
    const quiet = new IndicatorData({ seed: 1, count: N, start: START, batchImport: false });
    expect(quiet.sameTsRuns.map((r) => r.count)).toEqual([7, 7, 7]);
  });

  it('spreads scores 1..10, ~10% own org, ~0.5% blocks and whitelists, some fresh above threshold', () => {
    let own = 0;
    let blocks = 0;
    let whites = 0;
    let ttls = 0;
    let fresh = 0;
    for (let i = 0; i < N; i++) {
      const s = d.scoreAt(i);
      expect(s).toBeGreaterThanOrEqual(1);
      expect(s).toBeLessThanOrEqual(10);
      expect(Math.round(s * 100) / 100).toBe(s);
      if (d.gidAt(i) === d.ownGid) own++;
      const dec = d.decisionAt(i);
      if (dec?.decision === 1) blocks++;
      if (dec?.decision === 0) whites++;
      if (dec?.ttl !== undefined) ttls++;
      const t = START - d.tsAt(i);
      if (s / (1 + Math.exp((3 / s) * (t / 3600 - 2.5 * s))) >= 4) fresh++;
    }
    expect(own / N).toBeGreaterThan(0.08);
    expect(own / N).toBeLessThan(0.12);
    expect(blocks / N).toBeGreaterThan(0.003);
    expect(blocks / N).toBeLessThan(0.008);
    expect(whites / N).toBeGreaterThan(0.003);
    expect(whites / N).toBeLessThan(0.008);
    expect(ttls).toBeGreaterThan(0);
    expect(fresh / N).toBeGreaterThan(0.02);
    expect(fresh / N).toBeLessThan(0.5);
    expect([...d.ownIndices()].every((i) => d.gidAt(i) === d.ownGid)).toBe(true);
    expect(d.ownIndices().length).toBe(own);
    expect(d.decisionIndices().length).toBe(blocks + whites);
  });

  it('is deterministic per seed', () => {
    const a = new IndicatorData({ seed: 7, count: 100, start: START });
    const b = new IndicatorData({ seed: 7, count: 100, start: START });
    const c = new IndicatorData({ seed: 8, count: 100, start: START });
    const dump = (x: IndicatorData): string[] => Array.from({ length: 100 }, (_, i) => `${x.ipAt(i)} ${x.tsAt(i)} ${x.scoreAt(i)}`);
    expect(dump(a)).toEqual(dump(b));
    expect(dump(a)).not.toEqual(dump(c));
    expect(formatAddress(parseAddress('198.51.100.7')!)).toBe('198.51.100.7');
  });
});
