import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deltaReshapesIntervals } from '../../../src/firewall/nft/overlaps.js';
import { kernelColumns } from '../../../src/firewall/entries.js';
import { fromNumber, toCidr, type Cidr } from '../../../src/net/ipv4.js';

const entry = (text: string) => ({ cidr: toCidr(text)!, timeout: undefined });
/** Entries to add, and elements to delete (texts), as the delta holds them. */
const add = (list: { cidr: Cidr; timeout: undefined }[]) => kernelColumns(list, list.length);
const del = (texts: string[]) => add(texts.map(entry));

describe('deltaReshapesIntervals (an nft delta that would trip the interval overlap check)', () => {
  it('a wider entry split around a narrower one, or pieces merged back, reshapes', () => {
    expect(deltaReshapesIntervals(add([entry('192.0.2.0/30'), entry('192.0.2.7')]), del(['192.0.2.0/24']))).toBe(true);
    expect(deltaReshapesIntervals(add([entry('192.0.2.0/24')]), del(['192.0.2.0/30', '192.0.2.7']))).toBe(true);
  });

  it('a timeout refresh (same element deleted and added) and disjoint changes do not', () => {
    expect(deltaReshapesIntervals(add([entry('192.0.2.0/24')]), del(['192.0.2.0/24']))).toBe(false);
    expect(deltaReshapesIntervals(add([entry('198.51.100.1'), entry('10.0.0.0/8')]), del(['192.0.2.0/24', '203.0.113.5']))).toBe(false);
    expect(deltaReshapesIntervals(add([]), del(['192.0.2.0/24']))).toBe(false);
  });

  it('agrees with a pairwise check on arbitrary disjoint deletions', () => {
    const cidr = fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 20, max: 32 })).map(([n, p]) => fromNumber(n, p));
    fc.assert(
      fc.property(fc.array(cidr, { maxLength: 8 }), fc.array(cidr, { maxLength: 8 }), (adds, dels) => {
        // The kernel's set never overlaps itself: keep the deletions disjoint.
        const disjoint = dels.filter((d, i) => dels.every((o, j) => j >= i || o.end < d.start || o.start > d.end));
        const expected = adds.some((a) => disjoint.some((d) => d.end >= a.start && d.start <= a.end && (d.start !== a.start || d.prefix !== a.prefix)));
        const got = deltaReshapesIntervals(add(adds.map((c) => ({ cidr: c, timeout: undefined }))), del(disjoint.map((d) => d.text)));
        expect(got).toBe(expected);
      }),
    );
  });
});
