import { describe, expect, it } from 'vitest';
import { DELTA_MAX_CHANGES, TIMEOUT_TOLERANCE_S, chooseMode, diffEntries, timeoutsDiffer } from '../../../src/firewall/diff.js';
import fc from 'fast-check';
import { fromNumber, toCidr } from '../../../src/net/ipv4.js';
import { kernelColumns, listingColumns, type KernelEntry } from '../../../src/firewall/entries.js';

const e = (cidr: string, timeout?: number): KernelEntry => ({ cidr: toCidr(cidr)!, timeout });
const wantedOf = (list: KernelEntry[]) => kernelColumns(list, list.length);

describe('diffEntries', () => {
  it('finds added, removed and re-timed entries', () => {
    const current = new Map<string, number | undefined>([
      ['192.0.2.1', undefined],
      ['192.0.2.2', 100],
      ['192.0.2.3', 100],
      ['192.0.2.4', 100],
    ]);
    const d = diffEntries(listingColumns(current), wantedOf([e('192.0.2.2', 100 + TIMEOUT_TOLERANCE_S), e('192.0.2.3', 500), e('192.0.2.4'), e('192.0.2.5', 9)]));
    expect(d.added).toBe(1);
    expect(d.updated).toBe(2);
    expect(d.removed).toBe(1);
    expect(d.del.texts()).toEqual(['192.0.2.1']);
    expect(d.add.texts()).toEqual(['192.0.2.3', '192.0.2.4', '192.0.2.5']);
    expect([d.add.timeoutAt(0), d.add.timeoutAt(1), d.add.timeoutAt(2)]).toEqual([500, undefined, 9]);
  });

  it('compares remaining times as they are now when the kernel was read a while ago', () => {
    // Read 12 s ago (while the pull ran): 3600 then is 3588 now, the very timeout now wanted.
    const current = new Map<string, number | undefined>([
      ['192.0.2.1', 3600],
      ['192.0.2.2', undefined],
    ]);
    const wanted = wantedOf([e('192.0.2.1', 3588), e('192.0.2.2')]);
    expect(diffEntries(listingColumns(current), wanted, 12).updated).toBe(0);
    // Without the age the same read looks 12 s off: every timed entry would be re-added.
    expect(diffEntries(listingColumns(current), wanted).updated).toBe(1);
  });

  it('treats permanent and timed as different', () => {
    expect(timeoutsDiffer(undefined, undefined)).toBe(false);
    expect(timeoutsDiffer(undefined, 5)).toBe(true);
    expect(timeoutsDiffer(5, undefined)).toBe(true);
    expect(timeoutsDiffer(100, 104)).toBe(false);
    expect(timeoutsDiffer(100, 106)).toBe(true);
  });
});

describe('chooseMode', () => {
  const d = (n: number) => ({ add: [], del: [], added: n, removed: 0, updated: 0 });
  it('none / delta / full by size of change', () => {
    expect(chooseMode(d(0), 100, 100, false)).toBe('none');
    expect(chooseMode(d(0), 100, 100, true)).toBe('full');
    expect(chooseMode(d(50), 100, 100, false)).toBe('delta');
    expect(chooseMode(d(51), 100, 100, false)).toBe('full');
    // Growing a set by a seventh of its size is a delta, not a rebuild.
    expect(chooseMode(d(10_000), 60_000, 70_000, false)).toBe('delta');
    expect(chooseMode(d(DELTA_MAX_CHANGES), 2_000_000, 2_000_000, false)).toBe('delta');
    expect(chooseMode(d(DELTA_MAX_CHANGES + 1), 2_000_000, 2_000_000, false)).toBe('full');
  });
});

describe('diffEntries on columns', () => {
  it('agrees with a diff by CIDR text over Maps (adds in wanted order, dels in kernel order)', () => {
    // Addresses from a small range so the kernel and the wanted lists share many entries.
    const arbList = fc.array(
      fc.tuple(fc.integer({ min: 0, max: 63 }), fc.constantFrom(30, 32), fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined })),
      { maxLength: 40 },
    );
    fc.assert(
      fc.property(arbList, arbList, (kernel, wanted) => {
        const current = new Map<string, number | undefined>();
        for (const [n, p, t] of kernel) current.set(fromNumber(0xc0000200 + n * 4, p).text, t);
        const want = new Map<string, KernelEntry>();
        for (const [n, p, t] of wanted) {
          const c = fromNumber(0xc0000200 + n * 4, p);
          if (!want.has(c.text)) want.set(c.text, { cidr: c, timeout: t });
        }
        const d = diffEntries(listingColumns(current), wantedOf([...want.values()]));
        const expectedAdd = [...want.values()].filter((w) => !current.has(w.cidr.text) || timeoutsDiffer(current.get(w.cidr.text), w.timeout));
        expect(d.add.texts()).toEqual(expectedAdd.map((w) => w.cidr.text));
        expect(d.del.texts()).toEqual([...current.keys()].filter((k) => !want.has(k)));
        expect(d.added).toBe([...want.keys()].filter((k) => !current.has(k)).length);
        expect(d.added + d.updated).toBe(expectedAdd.length);
      }),
    );
  });
});
