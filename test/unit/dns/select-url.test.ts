import { describe, expect, it } from 'vitest';
import type { Indicator } from '../../../src/feed/indicator.js';
import { mustParseCidr } from '../../../src/net/ipv4.js';
import { selectEntries, type SelectionInput } from '../../../src/policy/select.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { createScoring } from '../../../src/score/decay.js';

/** IPv4-literal URL hosts in the firewall selection: reason `url`, the same guards as any indicator. */
const NOW = 1_800_000_000;
const scoring = createScoring({});
const ind = (ip: string, score = 9): Indicator => ({ cidr: mustParseCidr(ip, 'test'), score, ts: NOW });
const input = (over: Partial<SelectionInput>): SelectionInput => ({
  now: NOW, feed: [], manualBlocks: [], whitelist: [], protectedSet: ProtectedSet.of([]), minPrefix: 8, threshold: 3, maximumRules: 100, scoring, ...over,
});

describe('URL addresses in the firewall selection', () => {
  it('come after the manual blocks and before score entries, with their own expiry', () => {
    const s = selectEntries(
      input({
        feed: [ind('203.0.113.9', 9.9)],
        manualBlocks: [ind('198.51.100.1')],
        urlAddresses: [{ ip: '192.0.2.7', score: 5, expiresAt: NOW + 600 }],
      }),
    );
    expect(s.entries.map((e) => [e.cidr.text, e.reason, e.expiresAt])).toEqual([
      ['198.51.100.1', 'manual', null],
      ['192.0.2.7', 'url', NOW + 600],
      ['203.0.113.9', 'score', expect.any(Number)],
    ]);
  });

  it('never loopback, the allowlist or whitelisted addresses; an address also manually blocked or in the feed counts once', () => {
    const s = selectEntries(
      input({
        feed: [ind('192.0.2.20', 9)],
        manualBlocks: [ind('192.0.2.30')],
        whitelist: [ind('192.0.2.40')],
        protectedSet: ProtectedSet.of([mustParseCidr('192.0.2.50/32', 'allowlist.0')]),
        urlAddresses: ['127.0.0.1', '192.0.2.20', '192.0.2.30', '192.0.2.40', '192.0.2.50'].map((ip) => ({ ip, score: 9, expiresAt: null })),
      }),
    );
    expect(s.entries.map((e) => [e.cidr.text, e.reason])).toEqual([
      ['192.0.2.30', 'manual'],
      ['192.0.2.20', 'url'],
    ]);
    expect(s.skipped).toMatchObject({ allowlist: 2, whitelist: 1 });
  });

  it('count within maximum_rules', () => {
    const s = selectEntries(input({ maximumRules: 2, feed: [ind('203.0.113.1')], urlAddresses: ['192.0.2.1', '192.0.2.2'].map((ip) => ({ ip, score: 9, expiresAt: null })) }));
    expect(s.entries.map((e) => e.reason)).toEqual(['url', 'url']);
    expect(s.skipped.cap).toBe(1);
  });
});
