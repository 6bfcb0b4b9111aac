import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromNumber, mustParseCidr, overlaps, type Cidr } from '../../../src/net/ipv4.js';
import { BUILT_IN_PROTECTED, ProtectedSet, filterProtected, type ProtectedMember, type ProtectedSource } from '../../../src/policy/protect.js';
import { selectEntries } from '../../../src/policy/select.js';
import { createScoring } from '../../../src/score/decay.js';

const NOW = 1_800_000_000;
const c = (s: string) => mustParseCidr(s, 'test');
// A small address space (plus the built-in ranges' edges), so entries and members overlap often.
const arbCidr = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 1023 }), fc.constantFrom(32, 32, 30, 27, 24, 22)).map(([n, p]) => fromNumber(0xc6336400 + n, p)),
  fc.tuple(fc.constantFrom(0x7f000001, 0xa9fea9fe, 0xe0000001, 0xffffffff, 0x00000000, 0xdfffffff, 0x7effffff), fc.constantFrom(32, 24, 8)).map(([n, p]) => fromNumber(n, p)),
);
const sources: ProtectedSource[] = ['own_address', 'allowlist', 'api_server', 'api_server_last_known', 'proxy', 'resolver', 'gateway', 'ssh_session'];
const arbMember: fc.Arbitrary<ProtectedMember> = fc.record({ cidr: arbCidr, source: fc.constantFrom(...sources) });

describe('ProtectedSet and filterProtected', () => {
  it('the built-in ranges: loopback, 0/8, link-local, multicast, reserved with the broadcast address', () => {
    const set = new ProtectedSet(BUILT_IN_PROTECTED);
    const source = (ip: string) => set.memberFor(c(ip))?.source;
    expect(['127.0.0.1', '0.0.0.0', '169.254.169.254', '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255'].map(source)).toEqual([
      'loopback', 'this_network', 'link_local', 'multicast', 'multicast', 'reserved', 'reserved',
    ]);
    expect(source('198.51.100.1')).toBeUndefined();
    expect(source('223.255.255.255')).toBeUndefined();
  });

  it('removes an entry overlapping a member (a network holding a protected address too), naming the most specific member', () => {
    const set = new ProtectedSet([
      { cidr: c('198.51.100.0/24'), source: 'allowlist' },
      { cidr: c('198.51.100.53'), source: 'resolver', detail: '/etc/resolv.conf' },
    ]);
    const r = filterProtected([c('198.51.100.53'), c('198.51.100.7'), c('198.51.0.0/16'), c('203.0.113.5')], set, (e) => e);
    expect(r.kept.map((e) => e.text)).toEqual(['203.0.113.5']);
    expect(r.removed.map((x) => [x.entry.text, x.member.source])).toEqual([
      ['198.51.100.53', 'resolver'],
      ['198.51.100.7', 'allowlist'],
      ['198.51.0.0/16', 'resolver'],
    ]);
  });

  it('for arbitrary entries and members: kept never overlaps a member, removed always does, nothing is lost or reordered', () => {
    fc.assert(
      fc.property(fc.array(arbCidr, { maxLength: 40 }), fc.array(arbMember, { maxLength: 8 }), (entries, members) => {
        const set = new ProtectedSet([...BUILT_IN_PROTECTED, ...members]);
        const all = set.members.map((m) => m.cidr);
        const r = filterProtected(entries, set, (e) => e);
        for (const k of r.kept) expect(all.some((m) => overlaps(k, m))).toBe(false);
        for (const x of r.removed) expect(overlaps(x.entry, x.member.cidr)).toBe(true);
        expect(r.kept.length + r.removed.length).toBe(entries.length);
        expect(r.kept).toEqual(entries.filter((e) => !r.removed.some((x) => x.entry === e)));
      }),
      { numRuns: 500 },
    );
  });

  it('for arbitrary feeds, manual blocks and protected sets, selection then filter never outputs an entry overlapping a member', () => {
    const scoring = createScoring({});
    const arbInd = fc.record({ cidr: arbCidr, score: fc.double({ min: 0, max: 12, noNaN: true }), ts: fc.integer({ min: NOW - 86400, max: NOW }) });
    fc.assert(
      fc.property(fc.array(arbInd, { maxLength: 60 }), fc.array(arbInd, { maxLength: 10 }), fc.array(arbMember, { maxLength: 8 }), (feed, manualBlocks, members) => {
        const set = new ProtectedSet([...BUILT_IN_PROTECTED, ...members]);
        const selection = selectEntries({ now: NOW, feed, manualBlocks, whitelist: [], protectedSet: set, minPrefix: 0, threshold: 1, maximumRules: 100, scoring });
        // The selection already leaves them out: the filter (the last step before a write) finds nothing to remove.
        const r = filterProtected(selection.entries, set, (e) => e.cidr);
        expect(r.removed).toEqual([]);
        const all: Cidr[] = set.members.map((m) => m.cidr);
        for (const e of r.kept) expect(all.some((m) => overlaps(e.cidr, m))).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
