import { describe, expect, it } from 'vitest';
import { UrlCache } from '../../../src/feed/url-cache.js';
import { DomainPolicy } from '../../../src/policy/domain-policy.js';
import { selectDomains } from '../../../src/policy/domains.js';
import { createScoring } from '../../../src/score/decay.js';

const NOW = 1_795_000_000;
const scoring = createScoring({}, () => undefined);
const policy = (o: Partial<{ allowlist: string[]; apiHost: string; sharedExtra: string[] }> = {}) =>
  new DomainPolicy({ allowlist: o.allowlist ?? [], apiHost: o.apiHost, sharedExtra: o.sharedExtra ?? [] });

function cache(rows: [url: string, score: number, decision?: -1 | 0 | 1, ageS?: number][]): UrlCache {
  const c = new UrlCache();
  for (const [u, s, d, age] of rows) c.upsert(u, s, NOW - (age ?? 0), d ?? -1);
  return c;
}

const select = (c: UrlCache, o: { threshold?: number; cap?: number; policy?: DomainPolicy } = {}) =>
  selectDomains({ now: NOW, urls: c, scoring, threshold: o.threshold ?? 4, maximumDomains: o.cap ?? 100, policy: o.policy ?? policy() });

describe('domain selection (the contract\'s order of precedence)', () => {
  it('blacklisted hosts first, then by best score, ties by name; capped', () => {
    const c = cache([
      ['http://b.example/1', 6],
      ['http://b.example/2', 9],
      ['http://a.example/', 6],
      ['http://c.example/', 6],
      ['http://m.example/', 1, 1],
      ['http://low.example/', 2],
    ]);
    const s = select(c);
    expect(s.domains.map((d) => [d.name, d.reason])).toEqual([
      ['m.example', 'manual'],
      ['b.example', 'score'],
      ['a.example', 'score'],
      ['c.example', 'score'],
    ]);
    expect(s.domains[1]!.urls).toBe(2);
    expect(s.skipped.threshold).toBe(1);
    const capped = select(c, { cap: 2 });
    expect(capped.domains.map((d) => d.name)).toEqual(['m.example', 'b.example']);
    expect(capped.skipped.cap).toBe(2);
  });

  it('never public suffixes, shared platforms (shipped and configured), allowlisted names or their parents, the API host, whitelisted hosts', () => {
    const c = cache([
      ['http://github.io/', 10, 1],
      ['http://docs.google.com/x', 10],
      ['http://raw.githubusercontent.com/x', 10, 1],
      ['http://files.corp-share.example/', 10],
      ['http://x.allowed.example/', 10],
      ['http://allowed.example/', 10],
      ['http://vendor.example/', 10],
      ['http://w.example/bad', 10],
      ['http://w.example/good', 1, 0],
      ['http://evil.github.io/', 10],
    ]);
    const s = select(c, { policy: policy({ allowlist: ['x.allowed.example'], apiHost: 'api.vendor.example', sharedExtra: ['corp-share.example'] }) });
    expect(s.domains.map((d) => d.name)).toEqual(['evil.github.io']);
    expect(s.skipped).toMatchObject({ public_suffix: 1, shared_platform: 3, allowlist: 3, whitelist: 1 });
  });

  it('a URL record seen again is replaced by the newest one (a decision cleared with -1 no longer blocks)', () => {
    const c = cache([['http://x.example/', 1, 1, 100]]);
    c.upsert('http://x.example/', 1, NOW, -1);
    expect(select(c).domains).toEqual([]);
    c.upsert('http://x.example/', 9, NOW - 500, 1); // older than what is cached: ignored
    expect(select(c).domains).toEqual([]);
  });

  it('IPv4-literal hosts are answered for the firewall, never as names; whitelisted ones not at all', () => {
    const c = cache([
      ['http://198.51.100.7:8080/a', 9],
      ['http://198.51.100.8/', 1, 1],
      ['http://198.51.100.9/', 9],
      ['http://198.51.100.9/ok', 1, 0],
      ['http://198.51.100.10/', 1],
    ]);
    const s = select(c);
    expect(s.domains).toEqual([]);
    expect(s.addresses.map((a) => [a.ip, a.expiresAt === null])).toEqual([
      ['198.51.100.7', false],
      ['198.51.100.8', true],
    ]);
  });

  it('a scored name expires when its best URL falls below the threshold', () => {
    const s = select(cache([['http://e.example/', 5]]));
    const e = s.domains[0]!;
    expect(e.expiresAt).toBeGreaterThan(NOW);
    expect(scoring.score(5, e.expiresAt! - NOW - 60)).toBeGreaterThanOrEqual(4);
    expect(scoring.score(5, e.expiresAt! - NOW + 60)).toBeLessThan(4);
  });
});

describe('URL cache', () => {
  it('keeps a million URLs in tens of MB, not hundreds', () => {
    const before = process.memoryUsage().arrayBuffers;
    const c = new UrlCache();
    for (let i = 0; i < 1_000_000; i++) c.upsert(`https://h${i % 50_000}.example/path/${i}`, 5, NOW, -1);
    const used = process.memoryUsage().arrayBuffers - before;
    expect(c.size).toBe(1_000_000);
    expect(c.hosts.length).toBe(50_000);
    expect(used).toBeLessThan(80 * 1024 * 1024);
  });

  it('merge: newest record of a URL wins, new URLs and hosts are added', () => {
    const a = cache([['http://a.example/', 5, -1, 100]]);
    const b = cache([
      ['http://a.example/', 9, 1, 0],
      ['http://b.example/', 7],
    ]);
    a.merge(b);
    expect(a.size).toBe(2);
    expect(select(a).domains.map((d) => [d.name, d.reason])).toEqual([
      ['a.example', 'manual'],
      ['b.example', 'score'],
    ]);
  });
});
