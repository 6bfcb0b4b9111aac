import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { RangeSet, cidrAt, fromNumber, numberToIp, overlaps, parseCidr, toCidr } from '../../../src/net/ipv4.js';

describe('parseCidr', () => {
  it('normalises networks to their network address and /32 to a bare address', () => {
    expect(parseCidr('10.1.2.3/8')).toMatchObject({ ok: true, cidr: { text: '10.0.0.0/8', prefix: 8 } });
    expect(parseCidr('192.0.2.7/32')).toMatchObject({ ok: true, cidr: { text: '192.0.2.7' } });
    expect(parseCidr('0.0.0.0/0')).toMatchObject({ ok: true, cidr: { text: '0.0.0.0/0', start: 0, end: 0xffffffff } });
  });

  it.each(['127.1', '010.1.1.1', '1.2.3.4/33', '1.2.3.4/', '1.2.3.4/08x', '::1', '1.2.3.4 ', '', '256.1.1.1', '1.2.3.4/-1'])(
    'rejects %j with a message',
    (s) => {
      const r = parseCidr(s);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(/IPv4|prefix/);
    },
  );

  it('round-trips any address and prefix', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 }), (n, p) => {
        const c = fromNumber(n, p);
        const r = parseCidr(c.text);
        expect(r.ok && r.cidr).toEqual(c);
        expect(parseCidr(numberToIp(n)).ok).toBe(true);
      }),
    );
  });
});

describe('RangeSet', () => {
  it('answers overlap the same as a linear scan', () => {
    const arb = fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 })).map(([n, p]) => fromNumber(n, p));
    fc.assert(
      fc.property(fc.array(arb, { maxLength: 30 }), arb, (set, q) => {
        expect(new RangeSet(set).overlaps(q)).toBe(set.some((s) => overlaps(s, q)));
      }),
      { numRuns: 500 },
    );
  });
});

describe('cidrAt', () => {
  it('reads a network in place exactly as toCidr reads the same text', () => {
    const texts = fc.oneof(
      fc.tuple(fc.nat(0xffffffff), fc.integer({ min: 0, max: 32 })).map(([v, p]) => fromNumber(v, p).text),
      fc.constantFrom('01.2.3.4', '1.2.3.4/32', '10.1.2.3/8', '256.1.1.1', '1.2.3', '1.2.3.4.5', '', 'x', '1.2.3.4/', '0.0.0.0', '255.255.255.255'),
      fc.string({ maxLength: 18 }),
    );
    fc.assert(
      fc.property(texts, fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), (t, before, after) => {
        const out = { start: -1, prefix: -1 };
        const ok = cidrAt(before + t + after, before.length, before.length + t.length, out);
        const c = toCidr(t);
        expect(ok).toBe(c !== undefined);
        if (c) expect(out).toEqual({ start: c.start, prefix: c.prefix });
      }),
      { numRuns: 2000 },
    );
  });
});
