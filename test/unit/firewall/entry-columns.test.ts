import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EntryColumns } from '../../../src/firewall/entry-columns.js';
import { normalizeEntries } from '../../../src/firewall/entries.js';
import { fromNumber } from '../../../src/net/ipv4.js';

const snapshot = (c: EntryColumns) => Array.from({ length: c.length }, (_, i) => [c.text(i), c.timeoutAt(i)]);

// Few distinct networks, so duplicates are common; timeouts whole or fractional, some absent.
const arbEntry = fc.record({
  n: fc.integer({ min: 0, max: 60 }),
  prefix: fc.constantFrom(32, 32, 24),
  timeout: fc.option(fc.oneof(fc.integer({ min: 1, max: 5000 }), fc.double({ min: 0, max: 5000, noNaN: true })), { nil: undefined }),
});

describe('normalizeEntries on columns', () => {
  it('answers columns that are already normal as they are, without a copy', () => {
    const c = new EntryColumns(3);
    c.push(0xc0000201, 32, 60);
    c.push(0xc6336400, 24, undefined);
    c.push(0xcb007107, 32, 1);
    expect(normalizeEntries(c)).toBe(c);
  });

  it('agrees with a de-duplication by CIDR text, and never writes to its input', () => {
    fc.assert(
      fc.property(fc.array(arbEntry, { maxLength: 200 }), (list) => {
        const input = new EntryColumns(4);
        for (const e of list) input.push(fromNumber((0x0a000000 + e.n * 256) >>> 0, e.prefix).start, e.prefix, e.timeout);
        const before = snapshot(input);
        const ref = new Map<string, number | undefined>();
        for (const [text, t] of before as [string, number | undefined][]) {
          const k = t === undefined ? undefined : Math.max(1, Math.ceil(t));
          if (!ref.has(text)) ref.set(text, k);
          else {
            const p = ref.get(text);
            if (p !== undefined && (k === undefined || k > p)) ref.set(text, k);
          }
        }
        const out = normalizeEntries(input);
        expect(snapshot(out)).toEqual([...ref]);
        expect(snapshot(input)).toEqual(before);
      }),
      { numRuns: 300 },
    );
  });
});

describe('EntryColumns', () => {
  it('grows past its first capacity keeping every entry, and is empty after release', () => {
    const c = new EntryColumns(2);
    for (let i = 0; i < 100_000; i++) c.push(i * 16, 28, i % 2 ? i : undefined);
    expect(c.length).toBe(100_000);
    expect([c.text(99_999), c.timeoutAt(99_999), c.timeoutAt(99_998)]).toEqual(['0.24.105.240/28', 99_999, undefined]);
    c.release();
    expect(c.length).toBe(0);
    c.push(0xc0000201, 32, 5); // usable again (the daemon never does; nothing breaks if it did)
    expect(c.texts()).toEqual(['192.0.2.1']);
  });
});
