import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { selectEntries, type SelectionInput } from '../../../src/policy/select.js';
import { explainAddress } from '../../../src/policy/explain.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { createScoring } from '../../../src/score/decay.js';
import { fromNumber, mustParseCidr } from '../../../src/net/ipv4.js';
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

/** The selection run for `address`, then its explanation. */
function explain(address: string, over: Partial<SelectionInput>) {
  const query = mustParseCidr(address, 'address');
  const i = input(over);
  const selection = selectEntries({ ...i, explainFor: query });
  return explainAddress({ query, selection, protectedSet: i.protectedSet, whitelist: i.whitelist });
}

describe('explainAddress: the verdict from the selection', () => {
  it('score, with its rank and expiry as selected; manual first when both cover it', () => {
    const feed = [ind('203.0.113.1', 9), ind('203.0.113.0/24', 8), ind('203.0.113.5', 7)];
    const e = explain('203.0.113.5', { feed });
    expect(e).toMatchObject({ blocked: true, verdict: 'score' });
    // Both covering records are selected: the longer-lived /24 (higher score) decides.
    expect(e.decidedBy).toMatchObject({ kind: 'feed', rank: 2, result: 'selected' });
    expect(e.decidedBy!.cidr.text).toBe('203.0.113.0/24');
    const sel = selectEntries(input({ feed }));
    expect(e.decidedBy!.belowAt).toBe(sel.entries.find((x) => x.cidr.text === '203.0.113.0/24')!.expiresAt);
    expect(e.records.map((r) => [r.cidr.text, r.covers])).toEqual([['203.0.113.5', true], ['203.0.113.0/24', true]]);

    const m = explain('203.0.113.5', { feed, manualBlocks: [ind('203.0.113.5', 1)] });
    expect(m).toMatchObject({ blocked: true, verdict: 'manual' });
    expect(m.decidedBy).toMatchObject({ kind: 'manual', rank: 1 });
    // The address's feed record is decided as its manual block, not ranked again.
    expect(m.records.find((r) => r.cidr.text === '203.0.113.5')).toMatchObject({ result: 'as_manual_block' });
  });

  it('over_cap with its rank, for score entries and for manual blocks past the cap', () => {
    const feed = [ind('198.51.100.1', 9), ind('198.51.100.2', 8), ind('198.51.100.3', 7)];
    const e = explain('198.51.100.3', { feed, maximumRules: 3, manualBlocks: [ind('192.0.2.9')] });
    expect(e).toMatchObject({ blocked: false, verdict: 'over_cap' });
    expect(e.decidedBy).toMatchObject({ rank: 4 });
    const m = explain('192.0.2.9', { maximumRules: 1, manualBlocks: [ind('192.0.2.1'), ind('192.0.2.9')] });
    expect(m).toMatchObject({ verdict: 'over_cap', decidedBy: { kind: 'manual', rank: 2 } });
  });

  it('below_threshold: when it fell below, from its ts', () => {
    const e = explain('198.51.100.7', { feed: [ind('198.51.100.7', 4, 30 * 3600)] });
    expect(e).toMatchObject({ blocked: false, verdict: 'below_threshold' });
    const r = e.decidedBy!;
    expect(r.score!).toBeLessThan(3);
    expect(r.belowAt!).toBeLessThan(NOW);
    expect(r.belowAt!).toBeGreaterThan(NOW - 30 * 3600);
    expect(scoring.score(4, r.belowAt! - (NOW - 30 * 3600) + 1)).toBeLessThan(3);
    expect(scoring.score(4, r.belowAt! - (NOW - 30 * 3600) - 1)).toBeGreaterThanOrEqual(3);
  });

  it('allowlist vs protected: named by the protected member the record overlaps', () => {
    const protectedSet = new ProtectedSet([
      ...ProtectedSet.of([]).members,
      { cidr: mustParseCidr('192.0.2.1', 'gw'), source: 'gateway', detail: 'netns lab' },
      { cidr: mustParseCidr('192.0.2.77', 'a'), source: 'allowlist' },
    ]);
    // 192.0.2.5 is not protected itself, but the /24 that covers it holds the gateway.
    const gw = explain('192.0.2.5', { feed: [ind('192.0.2.0/24')], protectedSet });
    expect(gw).toMatchObject({ blocked: false, verdict: 'protected' });
    expect(gw.decidedBy!.protectedBy).toMatchObject({ source: 'gateway', detail: 'netns lab' });
    expect(gw.protectedBy).toBeUndefined();
    const allow = explain('192.0.2.77', { feed: [ind('192.0.2.77')], protectedSet });
    expect(allow).toMatchObject({ verdict: 'allowlist', protectedBy: { source: 'allowlist' } });
    expect(explain('127.0.0.9', { feed: [ind('127.0.0.9')] }).decidedBy!.protectedBy).toMatchObject({ source: 'loopback' });
  });

  it('whitelist names the whitelisted indicator; too_wide; not_in_feed', () => {
    const w = explain('198.51.100.9', { feed: [ind('198.51.100.0/24')], whitelist: [ind('198.51.100.200')] });
    expect(w).toMatchObject({ blocked: false, verdict: 'whitelist' });
    expect(w.decidedBy!.whitelistedBy!.text).toBe('198.51.100.200');
    expect(w.whitelist).toEqual([]); // the whitelisted address is not the one asked about
    expect(explain('44.1.2.3', { feed: [ind('44.0.0.0/7')] })).toMatchObject({ verdict: 'too_wide' });
    const none = explain('198.51.100.9', { feed: [ind('203.0.113.1')] });
    expect(none).toMatchObject({ blocked: false, verdict: 'not_in_feed', records: [] });
    expect(none.decidedBy).toBeUndefined();
  });

  it('not blocked by any covering record: the one that went furthest through the checks says why', () => {
    // The /16 is below the threshold, the /32 would pass it but the cap is full.
    const e = explain('198.51.100.9', { feed: [ind('203.0.113.1', 9), ind('198.51.0.0/16', 2), ind('198.51.100.9', 5)], maximumRules: 1 });
    expect(e).toMatchObject({ verdict: 'over_cap', decidedBy: { rank: 2 } });
  });

  it('a network query lists the records inside it, uncovered; its verdict rests on covering records only', () => {
    const e = explain('203.0.113.0/24', { feed: [ind('203.0.113.5'), ind('203.0.113.6', 1)] });
    expect(e).toMatchObject({ blocked: false, verdict: 'not_in_feed' });
    expect(e.records.map((r) => [r.cidr.text, r.covers, r.result])).toEqual([
      ['203.0.113.5', false, 'selected'],
      ['203.0.113.6', false, 'below_threshold'],
    ]);
  });
});

describe('selectEntries with explainFor', () => {
  const arbIndicator = fc
    .record({ a: fc.integer({ min: 0, max: 0xffffffff }), prefix: fc.integer({ min: 4, max: 32 }), score: fc.double({ min: 0.5, max: 10, noNaN: true }), age: fc.integer({ min: -600, max: 20 * 86400 }) })
    .map(({ a, prefix, score, age }): Indicator => ({ cidr: fromNumber(a, prefix), score, ts: NOW - age }));

  it('changes nothing of the selection, and explaining everything accounts for every skip and every entry', () => {
    fc.assert(
      fc.property(
        fc.array(arbIndicator, { maxLength: 60 }),
        fc.array(arbIndicator, { maxLength: 6 }),
        fc.array(arbIndicator, { maxLength: 4 }),
        fc.integer({ min: 0, max: 40 }),
        (feed, manualBlocks, whitelist, maximumRules) => {
          const base = input({ feed, manualBlocks, whitelist, maximumRules, protectedSet: ProtectedSet.of([mustParseCidr('100.64.0.0/10', 'a')]) });
          const plain = selectEntries(base);
          const all = selectEntries({ ...base, explainFor: { start: 0, end: 0xffffffff } });
          expect(all.entries).toEqual(plain.entries);
          expect(all.skipped).toEqual(plain.skipped);
          const ex = all.explained!;
          const count = { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 };
          for (const r of ex) if (r.outcome !== 'selected' && r.outcome !== 'manual') count[r.outcome]++;
          expect(count).toEqual(plain.skipped);
          const selected = ex.filter((r) => r.outcome === 'selected');
          expect(selected.map((r) => `${r.kind === 'manual' ? 'manual' : 'score'} ${r.cidr.text}`).sort()).toEqual(plain.entries.map((e) => `${e.reason} ${e.cidr.text}`).sort());
          // Ranks follow the entries' order.
          for (const r of selected) expect(plain.entries[r.rank! - 1]!.cidr.text).toBe(r.cidr.text);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('without explainFor there is no explained list', () => {
    expect(selectEntries(input({ feed: [ind('203.0.113.1')] })).explained).toBeUndefined();
  });
});
