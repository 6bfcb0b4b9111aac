import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { selectEntries, type SelectionInput } from '../../../src/policy/select.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { createScoring } from '../../../src/score/decay.js';
import { fromNumber, mustParseCidr, overlaps, type Cidr } from '../../../src/net/ipv4.js';
import type { Indicator } from '../../../src/feed/indicator.js';

const scoring = createScoring({});
const NOW = 1_800_000_000;
const ind = (ip: string, score = 9, age = 0): Indicator => ({ cidr: mustParseCidr(ip, 'test'), score, ts: NOW - age });

function input(over: Partial<SelectionInput>): SelectionInput {
  return {
    now: NOW,
    feed: [],
    manualBlocks: [],
    whitelist: [],
    protectedSet: ProtectedSet.of([]),
    minPrefix: 8,
    threshold: 3,
    maximumRules: 100,
    scoring,
    ...over,
  };
}
const ips = (s: { entries: { cidr: Cidr }[] }) => s.entries.map((e) => e.cidr.text);

describe('selectEntries precedence', () => {
  it('never blocks loopback, 0.0.0.0/8, allowlisted or overlapping networks', () => {
    const s = selectEntries(
      input({
        feed: [ind('127.0.0.1'), ind('0.1.2.3'), ind('198.51.100.7'), ind('198.51.0.0/16'), ind('203.0.113.5')],
        protectedSet: ProtectedSet.of([mustParseCidr('198.51.100.0/24', 'allowlist.0')]),
      }),
    );
    expect(ips(s)).toEqual(['203.0.113.5']);
    expect(s.skipped.allowlist).toBe(4);
  });

  it('an address both manually blocked and in the feed is skipped once, not once per record', () => {
    const s = selectEntries(
      input({
        feed: [ind('127.0.0.5'), ind('203.0.113.9'), ind('198.51.100.1')],
        manualBlocks: [ind('127.0.0.5'), ind('127.0.0.5'), ind('198.51.100.1')],
        whitelist: [ind('198.51.100.1')],
      }),
    );
    expect(ips(s)).toEqual(['203.0.113.9']);
    expect(s.skipped.allowlist).toBe(1);
    expect(s.skipped.whitelist).toBe(1);
  });

  it('an item stamped ahead of our clock expires at the same instant whenever the selection runs', () => {
    const ahead = { cidr: mustParseCidr('203.0.113.50', 'test'), score: 9, ts: NOW + 600 };
    const at = (now: number) => selectEntries(input({ now, feed: [ahead] })).entries[0]!.expiresAt;
    const first = at(NOW);
    expect(first).not.toBeNull();
    expect(at(NOW + 300)).toBe(first); // still before its ts
    expect(at(NOW + 900)).toBeCloseTo(first!, 6); // after its ts: the ordinary decay, same instant
    // and that instant is its ts plus the decay time of a fresh item
    const fresh = selectEntries(input({ now: NOW, feed: [{ ...ahead, ts: NOW }] })).entries[0]!.expiresAt!;
    expect(first).toBeCloseTo(fresh + 600, 6);
  });

  it('never blocks networks wider than min_prefix', () => {
    const s = selectEntries(input({ feed: [ind('20.0.0.0/7'), ind('30.0.0.0/8')], manualBlocks: [ind('40.0.0.0/6')], minPrefix: 8 }));
    expect(ips(s)).toEqual(['30.0.0.0/8']);
    expect(s.skipped.too_wide).toBe(2);
  });

  it('whitelist beats manual block and score, including by overlap', () => {
    const s = selectEntries(
      input({
        feed: [ind('203.0.113.0/24'), ind('192.0.2.9')],
        manualBlocks: [ind('198.51.100.1'), ind('198.51.100.2')],
        whitelist: [ind('203.0.113.77'), ind('198.51.100.1')],
      }),
    );
    expect(ips(s)).toEqual(['198.51.100.2', '192.0.2.9']);
    expect(s.skipped.whitelist).toBe(2);
  });

  it('manual blocks come first, even with a low or no score, and have no expiry', () => {
    const s = selectEntries(input({ feed: [ind('192.0.2.1', 9), ind('192.0.2.2', 0.5)], manualBlocks: [ind('192.0.2.2'), ind('192.0.2.3')] }));
    expect(s.entries.map((e) => [e.cidr.text, e.reason, e.expiresAt])).toEqual([
      ['192.0.2.2', 'manual', null],
      ['192.0.2.3', 'manual', null],
      ['192.0.2.1', 'score', expect.any(Number)],
    ]);
    expect(s.entries[1]!.score).toBeNull();
  });

  it('orders score entries highest first, ties by ip ascending (numerically)', () => {
    const s = selectEntries(input({ feed: [ind('10.0.0.10', 5), ind('10.0.0.9', 5), ind('10.0.0.100', 5), ind('1.1.1.1', 8)] }));
    expect(ips(s)).toEqual(['1.1.1.1', '10.0.0.9', '10.0.0.10', '10.0.0.100']);
  });

  it('drops entries whose decayed score is below the threshold', () => {
    // S=4 decays to half after 2.5*4 = 10 hours.
    const s = selectEntries(input({ feed: [ind('192.0.2.1', 4, 0), ind('192.0.2.2', 4, 11 * 3600)], threshold: 3 }));
    expect(ips(s)).toEqual(['192.0.2.1']);
    expect(s.skipped.threshold).toBe(1);
  });

  it('caps the total at maximum_rules, manual first', () => {
    const s = selectEntries(
      input({ feed: [ind('192.0.2.1', 9), ind('192.0.2.2', 8)], manualBlocks: [ind('198.51.100.3'), ind('198.51.100.4')], maximumRules: 3 }),
    );
    expect(ips(s)).toEqual(['198.51.100.3', '198.51.100.4', '192.0.2.1']);
    expect(s.skipped.cap).toBe(1);
  });

  it('gives each score entry the instant its decayed score crosses the threshold', () => {
    const s = selectEntries(input({ feed: [ind('192.0.2.1', 6, 3600)], threshold: 3 }));
    const e = s.entries[0]!;
    expect(e.expiresAt).not.toBeNull();
    expect(scoring.score(6, e.expiresAt! - (NOW - 3600))).toBeCloseTo(3, 6);
  });
});

// Properties over random feeds.
const arbCidr = fc
  .tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 4, max: 32 }))
  .map(([n, p]) => fromNumber(n, p));
const arbInd = fc.record({ cidr: arbCidr, score: fc.double({ min: 0, max: 12, noNaN: true }), ts: fc.integer({ min: NOW - 30 * 86400, max: NOW + 60 }) });
const arbInput = fc.record({
  feed: fc.array(arbInd, { maxLength: 60 }),
  manualBlocks: fc.array(arbInd, { maxLength: 10 }),
  whitelist: fc.array(arbInd, { maxLength: 10 }),
  allow: fc.array(arbCidr, { maxLength: 4 }),
  maximumRules: fc.integer({ min: 1, max: 40 }),
  threshold: fc.integer({ min: 1, max: 8 }),
  minPrefix: fc.integer({ min: 0, max: 24 }),
});

describe('selectEntries properties', () => {
  it('never exceeds maximum_rules, never holds a protected or whitelisted address, and is deterministic', () => {
    fc.assert(
      fc.property(arbInput, (a) => {
        const i = input({ ...a, protectedSet: ProtectedSet.of(a.allow) });
        const s = selectEntries(i);
        expect(s.entries.length).toBeLessThanOrEqual(a.maximumRules);
        for (const e of s.entries) {
          for (const w of [...a.whitelist.map((x) => x.cidr), ...a.allow, mustParseCidr('127.0.0.0/8', 't'), mustParseCidr('0.0.0.0/8', 't')]) {
            expect(overlaps(e.cidr, w)).toBe(false);
          }
          expect(e.cidr.prefix).toBeGreaterThanOrEqual(a.minPrefix);
          if (e.reason === 'score') expect(e.score!).toBeGreaterThanOrEqual(a.threshold);
        }
        // Same input, shuffled, gives the same output in the same order.
        const again = selectEntries({ ...i, feed: [...a.feed].reverse(), manualBlocks: [...a.manualBlocks].reverse() });
        expect(ips(again)).toEqual(ips(s));
        expect(new Set(ips(s)).size).toBe(s.entries.length);
      }),
      { numRuns: 300 },
    );
  });
});
