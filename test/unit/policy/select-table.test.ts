import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { selectEntries } from '../../../src/policy/select.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { IndicatorMap, type Indicator } from '../../../src/feed/indicator.js';
import { createScoring } from '../../../src/score/decay.js';
import { fromNumber } from '../../../src/net/ipv4.js';

const NOW = 1_800_000_000;
const scoring = createScoring({});
// Addresses in a small space so feed, manual blocks and whitelist overlap often.
const arbCidr = fc.tuple(fc.integer({ min: 0, max: 511 }), fc.constantFrom(32, 32, 31, 28, 24, 20, 6)).map(([n, p]) => fromNumber(0xc6336400 + n, p));
const arbInd = fc.record({ cidr: arbCidr, score: fc.oneof(fc.double({ min: 0, max: 12, noNaN: true }), fc.constantFrom(0, 5, 9)), ts: fc.integer({ min: NOW - 40 * 3600, max: NOW + 60 }) });

describe('selectEntries over an IndicatorMap', () => {
  it('selects exactly what it selects from the same de-duplicated records given as a list', () => {
    fc.assert(
      fc.property(
        fc.array(arbInd, { maxLength: 80 }),
        fc.array(arbInd, { maxLength: 8 }),
        fc.array(arbInd, { maxLength: 4 }),
        fc.array(arbCidr, { maxLength: 2 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 30 }),
        (feed, manualBlocks, whitelist, protectedNets, threshold, maximumRules, minPrefix) => {
          const table = new IndicatorMap();
          for (const i of feed) table.upsert(i);
          const list: Indicator[] = [...table.values()];
          const base = { now: NOW, manualBlocks, whitelist, protectedSet: ProtectedSet.of(protectedNets), threshold, maximumRules, minPrefix, scoring };
          expect(selectEntries({ ...base, feed: table })).toEqual(selectEntries({ ...base, feed: list }));
        },
      ),
      { numRuns: 500 },
    );
  });
});
