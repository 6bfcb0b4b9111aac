import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromNumber, mustParseCidr, overlaps } from '../../../src/net/ipv4.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { countOverrides, mergeOverrides, overrideFor, type LocalOverride } from '../../../src/policy/overrides.js';
import { rebaseOnDecisions, sameDecisions } from '../../../src/policy/decisions-rebase.js';
import type { SelectedEntry } from '../../../src/policy/types.js';

const NOW = 1_800_000_000;
const c = (s: string) => mustParseCidr(s, 'test');
const ov = (cidr: string, action: 'allow' | 'block', expiresAt: number | null = null): LocalOverride => ({ cidr: c(cidr), action, createdAt: NOW - 10, expiresAt });
const sel = (cidr: string, reason: SelectedEntry['reason'] = 'score', expiresAt: number | null = NOW + 600): SelectedEntry => ({ cidr: c(cidr), reason, score: reason === 'score' ? 5 : null, expiresAt });
const PROTECTED = ProtectedSet.of([c('192.0.2.1')], 'gateway');
const merge = (entries: SelectedEntry[], overrides: LocalOverride[], maximumRules = 100) =>
  mergeOverrides({ entries, overrides, protectedSet: PROTECTED, minPrefix: 16, maximumRules, now: NOW });
const texts = (es: readonly SelectedEntry[]) => es.map((e) => `${e.reason}:${e.cidr.text}`);

describe('local overrides merged into the selection', () => {
  it('an allow takes out every entry overlapping it, manual blocks and the /24 around it included', () => {
    const r = merge([sel('198.51.100.7', 'manual', null), sel('203.0.113.0/24'), sel('198.51.100.9')], [ov('198.51.100.7', 'allow'), ov('203.0.113.77', 'allow')]);
    expect(texts(r.entries)).toEqual(['score:198.51.100.9']);
    expect(r.allowed).toBe(2);
  });

  it('a block comes first in the cap with its own expiry, and an allow beats a block of the same address', () => {
    const r = merge([sel('198.51.100.1', 'manual', null), sel('198.51.100.2')], [ov('198.51.100.50', 'block', NOW + 7200), ov('198.51.100.60', 'block'), ov('198.51.100.60', 'allow')], 2);
    expect(texts(r.entries)).toEqual(['local:198.51.100.50', 'manual:198.51.100.1']);
    expect(r.entries[0]!.expiresAt).toBe(NOW + 7200);
    expect(r.refused.map((x) => [x.override.cidr.text, x.refusal.why])).toEqual([['198.51.100.60', 'allowed']]);
  });

  it('a block of a protected address or a network wider than min_prefix is refused, naming why', () => {
    const r = merge([], [ov('192.0.2.1', 'block'), ov('192.0.0.0/8', 'block'), ov('127.0.0.1', 'block')]);
    expect(r.entries).toEqual([]);
    expect(r.refused.map((x) => x.refusal)).toEqual([
      { why: 'protected', member: expect.objectContaining({ source: 'gateway' }) },
      { why: 'too_wide', minPrefix: 16 },
      { why: 'protected', member: expect.objectContaining({ source: 'loopback' }) },
    ]);
  });

  it('expired overrides count for nothing', () => {
    const r = merge([sel('198.51.100.7')], [ov('198.51.100.7', 'allow', NOW), ov('198.51.100.8', 'block', NOW - 1)]);
    expect(texts(r.entries)).toEqual(['score:198.51.100.7']);
    expect(countOverrides([ov('198.51.100.7', 'allow', NOW), ov('198.51.100.8', 'block'), ov('198.51.100.9', 'allow', NOW + 1)], NOW)).toEqual({ allow: 1, block: 1 });
  });

  it('a network both selected and locally blocked keeps the longer lifetime', () => {
    expect(merge([sel('198.51.100.7', 'manual', null)], [ov('198.51.100.7', 'block', NOW + 60)]).entries).toEqual([sel('198.51.100.7', 'manual', null)]);
    expect(merge([sel('198.51.100.7', 'score', NOW + 60)], [ov('198.51.100.7', 'block', NOW + 7200)]).entries).toEqual([
      { cidr: c('198.51.100.7'), reason: 'local', score: null, expiresAt: NOW + 7200 },
    ]);
  });

  it('property: nothing merged overlaps an active allow or the protected set, nothing is wider than min_prefix, and the cap holds', () => {
    const arbCidr = fc.tuple(fc.integer({ min: 0, max: 511 }), fc.constantFrom(32, 30, 24, 12)).map(([n, p]) => fromNumber(0xc0000200 + n, p));
    const arbOv = fc.record({ cidr: arbCidr, action: fc.constantFrom('allow' as const, 'block' as const), createdAt: fc.constant(NOW), expiresAt: fc.constantFrom(null, NOW - 5, NOW + 5) });
    const arbSel = fc.record({ cidr: arbCidr, reason: fc.constantFrom('manual' as const, 'score' as const), score: fc.constant(null), expiresAt: fc.constantFrom(null, NOW + 100) });
    fc.assert(
      fc.property(fc.array(arbSel, { maxLength: 20 }), fc.array(arbOv, { maxLength: 8 }), fc.integer({ min: 0, max: 25 }), (entries, overrides, cap) => {
        const r = mergeOverrides({ entries, overrides, protectedSet: PROTECTED, minPrefix: 16, maximumRules: cap, now: NOW });
        expect(r.entries.length).toBeLessThanOrEqual(cap);
        const allows = overrides.filter((o) => o.action === 'allow' && (o.expiresAt === null || o.expiresAt > NOW));
        for (const e of r.entries) {
          expect(allows.some((a) => overlaps(a.cidr, e.cidr))).toBe(false);
          if (e.reason === 'local') {
            expect(PROTECTED.overlaps(e.cidr)).toBe(false);
            expect(e.cidr.prefix).toBeGreaterThanOrEqual(16);
          }
        }
      }),
    );
  });
});

describe('which override covers an address (for explain)', () => {
  it('the most specific active one containing it; none for an address outside every override', () => {
    const list = [ov('198.51.100.0/24', 'block'), ov('198.51.100.7', 'allow', NOW + 60), ov('198.51.100.8', 'allow', NOW - 1)];
    expect(overrideFor(list, c('198.51.100.7'), NOW)?.action).toBe('allow');
    expect(overrideFor(list, c('198.51.100.8'), NOW)?.cidr.text).toBe('198.51.100.0/24');
    expect(overrideFor(list, c('198.51.101.1'), NOW)).toBeUndefined();
  });
});

describe('manual decisions rebased without the score feed', () => {
  const ind = (s: string) => ({ cidr: c(s), ts: NOW - 100, score: 5 });
  it('new manual blocks first, withdrawn ones gone, score entries kept unless whitelisted or past the cap', () => {
    const base = [sel('198.51.100.1', 'manual', null), sel('198.51.100.20'), sel('198.51.100.21'), sel('198.51.100.22', 'score', NOW - 1)];
    const next = rebaseOnDecisions({ base, manualBlocks: [ind('198.51.100.30'), ind('192.0.2.1')], whitelist: [ind('198.51.100.21')], protectedSet: PROTECTED, minPrefix: 16, maximumRules: 10, now: NOW });
    expect(texts(next)).toEqual(['manual:198.51.100.30', 'score:198.51.100.20']);
    expect(texts(rebaseOnDecisions({ base, manualBlocks: [ind('198.51.100.30')], whitelist: [], protectedSet: PROTECTED, minPrefix: 16, maximumRules: 2, now: NOW }))).toEqual([
      'manual:198.51.100.30',
      'score:198.51.100.20',
    ]);
  });

  it('same decisions: same networks whatever the order or timestamps', () => {
    expect(sameDecisions([ind('198.51.100.1'), ind('198.51.100.2')], [{ ...ind('198.51.100.2'), ts: 1 }, ind('198.51.100.1')])).toBe(true);
    expect(sameDecisions([ind('198.51.100.1')], [ind('198.51.100.1'), ind('198.51.100.2')])).toBe(false);
  });
});
