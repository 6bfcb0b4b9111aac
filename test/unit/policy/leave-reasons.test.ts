import { describe, expect, it } from 'vitest';
import { RangeSet, parseCidr, type Cidr } from '../../../src/net/ipv4.js';
import { leaveReason, type LeaveFacts } from '../../../src/policy/leave-reasons.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { rankOfCut } from '../../../src/policy/selected-columns.js';

const c = (t: string): Cidr => {
  const r = parseCidr(t);
  if (!r.ok) throw new Error(t);
  return r.cidr;
};
const why = (f: Partial<LeaveFacts>, t: string, reason: 'score' | 'manual' | 'url' | 'local' = 'score', expiresAt: number | null = null) =>
  leaveReason({ now: 1000, ...f }, c(t).start, c(t).prefix, reason, expiresAt);

describe('why an applied entry left', () => {
  const cycle: Partial<LeaveFacts> = {
    protectedSet: ProtectedSet.of([c('198.51.100.7')]),
    allows: [{ cidr: c('203.0.113.128/25'), action: 'allow', createdAt: 0, expiresAt: null }],
    minPrefix: 16,
    whitelist: new RangeSet([c('192.0.2.0/28')]),
    isManual: (start) => start === c('203.0.113.1').start,
    feedScore: (start) => (start === c('203.0.113.2').start ? 2.5 : start === c('203.0.113.3').start ? 7 : null),
    threshold: 4,
    rankOfCut: (score) => rankOfCut({ firstRank: 101, scores: new Float32Array([9, 8, 7, 6]) }, score),
  };

  it('names each reason from the facts, in the order the selection checks them', () => {
    expect(why(cycle, '203.0.113.5', 'score', 900).reason).toBe('expired');
    expect(why(cycle, '198.51.100.0/24').reason).toBe('protected');
    expect(why(cycle, '203.0.113.200').reason).toBe('local_allow');
    expect(why(cycle, '10.0.0.0/8').reason).toBe('too_wide');
    expect(why(cycle, '192.0.2.5').reason).toBe('whitelisted');
    expect(why(cycle, '203.0.113.9', 'local').reason).toBe('local_block_ended');
    expect(why(cycle, '203.0.113.9', 'manual').reason).toBe('manual_withdrawn');
    expect(why(cycle, '203.0.113.9', 'url').reason).toBe('not_in_feed');
    expect(why(cycle, '203.0.113.9', 'score').reason).toBe('not_in_feed');
    expect(why(cycle, '203.0.113.2')).toEqual({ reason: 'below_threshold', score: 2.5, rank: null });
    // Above the threshold, yet left: the cap; ranked after the cut scores above it.
    expect(why(cycle, '203.0.113.3')).toEqual({ reason: 'cut_by_maximum_rules', score: 7, rank: 103 });
  });

  it('claims nothing it does not know: a local apply knows no feed, so a score entry that left was cut', () => {
    expect(why({ protectedSet: ProtectedSet.of([]) }, '203.0.113.2', 'score')).toEqual({ reason: 'cut_by_maximum_rules', score: null, rank: null });
    // No decision facts: a manual entry that left is not called withdrawn.
    expect(why({}, '203.0.113.2', 'manual').reason).toBe('cut_by_maximum_rules');
  });
});
