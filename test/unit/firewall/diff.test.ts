import { describe, expect, it } from 'vitest';
import { DELTA_MAX_CHANGES, TIMEOUT_TOLERANCE_S, chooseMode, diffEntries, timeoutsDiffer } from '../../../src/firewall/diff.js';
import { toCidr } from '../../../src/net/ipv4.js';
import type { KernelEntry } from '../../../src/firewall/entries.js';

const e = (cidr: string, timeout?: number): KernelEntry => ({ cidr: toCidr(cidr)!, timeout });

describe('diffEntries', () => {
  it('finds added, removed and re-timed entries', () => {
    const current = new Map<string, number | undefined>([
      ['192.0.2.1', undefined],
      ['192.0.2.2', 100],
      ['192.0.2.3', 100],
      ['192.0.2.4', 100],
    ]);
    const d = diffEntries(current, [e('192.0.2.2', 100 + TIMEOUT_TOLERANCE_S), e('192.0.2.3', 500), e('192.0.2.4'), e('192.0.2.5', 9)]);
    expect(d.added).toBe(1);
    expect(d.updated).toBe(2);
    expect(d.removed).toBe(1);
    expect(d.del).toEqual(['192.0.2.1']);
    expect(d.add.map((x) => x.cidr.text)).toEqual(['192.0.2.3', '192.0.2.4', '192.0.2.5']);
  });

  it('compares remaining times as they are now when the kernel was read a while ago', () => {
    // Read 12 s ago (while the pull ran): 3600 then is 3588 now, the very timeout now wanted.
    const current = new Map<string, number | undefined>([
      ['192.0.2.1', 3600],
      ['192.0.2.2', undefined],
    ]);
    const wanted = [e('192.0.2.1', 3588), e('192.0.2.2')];
    expect(diffEntries(current, wanted, 12).updated).toBe(0);
    // Without the age the same read looks 12 s off: every timed entry would be re-added.
    expect(diffEntries(current, wanted).updated).toBe(1);
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
