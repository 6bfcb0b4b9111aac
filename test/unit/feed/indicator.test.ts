import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { IndicatorMap, toIndicator, type Indicator } from '../../../src/feed/indicator.js';
import { fromNumber, parseCidr } from '../../../src/net/ipv4.js';

const rows = (m: IndicatorMap) => [...m.values()].map((i) => [i.cidr.text, i.ts, i.score]);
// Few distinct addresses, so duplicates (and the newest-wins rule) are common; enough entries to grow and rehash.
const arbInd = fc
  .record({ n: fc.integer({ min: 0, max: 400 }), prefix: fc.constantFrom(32, 32, 24, 16), ts: fc.integer({ min: 0, max: 20 }), score: fc.double({ noNaN: true }) })
  .map(({ n, prefix, ts, score }): Indicator => ({ cidr: fromNumber(0xc0000000 + n * 65536, prefix), ts, score }));

describe('IndicatorMap', () => {
  it('behaves like a Map keyed by CIDR text where the newest record wins (equal ts: the later one)', () => {
    fc.assert(
      fc.property(fc.array(arbInd, { maxLength: 600 }), (inds) => {
        const m = new IndicatorMap();
        const ref = new Map<string, Indicator>();
        for (const ind of inds) {
          m.upsert(ind);
          const prev = ref.get(ind.cidr.text);
          if (prev === undefined || ind.ts >= prev.ts) ref.set(ind.cidr.text, ind);
        }
        expect(m.size).toBe(ref.size);
        expect(rows(m)).toEqual([...ref.values()].map((i) => [i.cidr.text, i.ts, i.score]));
        for (const ind of ref.values()) expect(m.tsAt(m.find(ind.cidr.start, ind.cidr.prefix))).toBe(ind.ts);
        expect(m.find(0x0a000000, 8)).toBe(-1);
        expect([...m.byCidr.keys()]).toEqual([...ref.keys()]);
        expect(m.columns().starts.length).toBe(m.size);
      }),
      { numRuns: 200 },
    );
  });

  it('setParts lets the last record win whatever its ts; merge upserts in the other map’s order', () => {
    const c = fromNumber(0xc0000201, 32);
    const m = new IndicatorMap();
    m.setParts(c.start, c.prefix, 10, 1);
    m.setParts(c.start, c.prefix, 5, 2);
    expect(rows(m)).toEqual([['192.0.2.1', 5, 2]]);
    const other = new IndicatorMap();
    other.upsert({ cidr: c, ts: 4, score: 3 });
    other.upsert({ cidr: fromNumber(0xc0000202, 32), ts: 1, score: 4 });
    m.merge(other);
    expect(rows(m)).toEqual([['192.0.2.1', 5, 2], ['192.0.2.2', 1, 4]]);
  });

  it('after compact (no spare room, no hash slots) finds and takes records as before; release empties it', () => {
    fc.assert(
      fc.property(fc.array(arbInd, { maxLength: 300 }), fc.array(arbInd, { maxLength: 50 }), (first, later) => {
        const m = new IndicatorMap();
        const ref = new IndicatorMap();
        for (const ind of first) [m, ref].forEach((x) => x.upsert(ind));
        m.compact();
        for (const ind of first) expect(m.find(ind.cidr.start, ind.cidr.prefix)).toBe(ref.find(ind.cidr.start, ind.cidr.prefix));
        expect(m.find(0x0a000000, 8)).toBe(-1);
        for (const ind of later) [m, ref].forEach((x) => x.upsert(ind));
        expect(rows(m)).toEqual(rows(ref));
        m.release();
        expect(m.size).toBe(0);
        expect(rows(m)).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('toIndicator parses like parseCidr, canonical or not', () => {
    for (const ip of ['192.0.2.1', '192.0.2.1/32', '192.0.2.7/24', '10.0.0.0/8', '0.0.0.0/0']) {
      const r = toIndicator({ ip, ts: 1, score: 2 });
      expect(r.ok && r.indicator.cidr).toEqual((parseCidr(ip) as { cidr: unknown }).cidr);
    }
    for (const ip of ['127.1', '010.1.1.1', '1.2.3.4/33', '']) {
      expect(toIndicator({ ip, ts: 1, score: 2 })).toEqual({ ok: false, error: (parseCidr(ip) as { error: string }).error });
    }
  });
});
