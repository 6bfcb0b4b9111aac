import fc from 'fast-check';
import { getPublicSuffix } from 'tldts';
import { describe, expect, it } from 'vitest';
import { hostOfUrl, normaliseName } from '../../../src/feed/host.js';
import { isDnsName } from '../../../src/net/dns-name.js';

describe('host of a feed URL', () => {
  it.each([
    ['https://Login.Example.COM./a?b#c', { kind: 'name', name: 'login.example.com' }],
    ['HTTP://user:pw@evil.example:8443/x', { kind: 'name', name: 'evil.example' }],
    ['evil.example/login', { kind: 'name', name: 'evil.example' }],
    ['https://bücher.de/', { kind: 'name', name: 'xn--bcher-kva.de' }],
    ['http://пример.рф/', { kind: 'name', name: 'xn--e1afmkfd.xn--p1ai' }],
    ['http://198.51.100.7:8080/x', { kind: 'ipv4', ip: '198.51.100.7' }],
    ['http://0xc6.51.100.7/', { kind: 'ipv4', ip: '198.51.100.7' }],
    ['https://github.io/', { kind: 'public_suffix', name: 'github.io' }],
    ['https://co.uk', { kind: 'public_suffix', name: 'co.uk' }],
    ['https://evil.github.io/', { kind: 'name', name: 'evil.github.io' }],
  ])('%s', (url, want) => {
    expect(hostOfUrl(url)).toEqual(want);
  });

  it.each(['', 'not a url', 'http://', 'http://[::1]/', 'javascript:alert(1)', 'http://exa mple.com/', 'http://a"b.example/', 'http://x*y.example/', 'http://a..b/'])(
    'invalid: %j',
    (url) => {
      expect(hostOfUrl(url).kind).toBe('invalid');
    },
  );

  it('operator input: a name or a URL', () => {
    expect(normaliseName('Evil.Example.')).toEqual({ kind: 'name', name: 'evil.example' });
    expect(normaliseName('https://evil.example/x')).toEqual({ kind: 'name', name: 'evil.example' });
  });

  it('never throws, and what may be blocked is a valid DNS name and never a public suffix (arbitrary strings)', () => {
    const urlish = fc.oneof(
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.tuple(fc.constantFrom('http://', 'https://', 'HTTP://', '', 'ftp://'), fc.domain(), fc.constantFrom('', '.', ':80', '/x')).map((p) => p.join('')),
      fc.tuple(fc.constantFrom('http://'), fc.constantFrom('github.io', 'co.uk', 'blogspot.com', 'com', 'appspot.com', 's3.amazonaws.com', 'uk')).map((p) => p.join('')),
    );
    fc.assert(
      fc.property(urlish, (s) => {
        const h = hostOfUrl(s);
        if (h.kind === 'name') {
          expect(isDnsName(h.name)).toBe(true);
          expect(getPublicSuffix(h.name, { allowPrivateDomains: true })).not.toBe(h.name);
        }
        if (h.kind === 'public_suffix') expect(getPublicSuffix(h.name, { allowPrivateDomains: true })).toBe(h.name);
      }),
      { numRuns: 3000 },
    );
  });
});
