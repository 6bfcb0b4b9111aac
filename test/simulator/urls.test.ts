import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from './index.js';
import { getJson, send } from './test-helpers.js';

const NOW = 1_795_000_000;
let sim: Simulator;

interface UrlPage {
  header: { next_ts: number; page_size: number; ts: number; type: string };
  body: { url: string; score: number; ts: number; tags: string[]; total_reports: number; entry_ts: number }[];
}

/** The contract's walk: from ts with a limit, again from next_ts while a page is full, stepping past a stuck next_ts. */
async function walkUrls(s: Simulator, from = 0, limit = 1999): Promise<{ byUrl: Map<string, UrlPage['body'][number]>; pages: number }> {
  const byUrl = new Map<string, UrlPage['body'][number]>();
  let ts = from;
  let pages = 0;
  for (;;) {
    const r = await getJson<UrlPage>(s, `/urls?ts=${ts}&limit=${limit}`);
    expect(r.status).toBe(200);
    pages++;
    for (const it of r.body.body) byUrl.set(it.url, it);
    if (r.body.body.length < limit) break;
    ts = r.body.header.next_ts > ts ? r.body.header.next_ts : ts + 1;
  }
  return { byUrl, pages };
}

beforeAll(async () => {
  sim = await startSimulator({ urls: 20_000, seed: 5, now: NOW });
});
afterAll(() => sim.close());

describe('GET /urls (E4)', () => {
  it('a walk by next_ts reaches every URL once, in ts order per page', async () => {
    const all = [...sim.urlRecords()];
    expect(all).toHaveLength(20_000);
    const { byUrl, pages } = await walkUrls(sim);
    expect(pages).toBeGreaterThan(10);
    expect(byUrl.size).toBe(new Set(all.map((r) => r.url)).size);
    const first = await getJson<UrlPage>(sim, '/urls?limit=500');
    const ts = first.body.body.map((i) => i.ts);
    expect(ts).toEqual([...ts].sort((a, b) => a - b));
    expect(first.body.header.next_ts).toBe(ts.at(-1));
    expect(first.body.header.type).toBe('urls');
  });

  it('limit outside 101..1999 is a 400 naming the field; the edges are accepted', async () => {
    for (const bad of ['100', '2000', '0', 'x', '-5']) {
      const r = await getJson<{ message: string }>(sim, `/urls?limit=${bad}`);
      expect(r.status).toBe(400);
      expect(r.body.message).toMatch(/^limit: /);
    }
    expect((await getJson(sim, '/urls?limit=101')).status).toBe(200);
    expect((await getJson<UrlPage>(sim, '/urls?limit=1999')).body.body).toHaveLength(1999);
    expect((await getJson<{ message: string }>(sim, '/urls?ts=-1')).body.message).toMatch(/^ts: /);
  });

  it('the data holds shared platforms, IDN and IP-literal hosts, ports, userinfo, odd encodings and malformed URLs', () => {
    const urls = [...sim.urlRecords()].map((r) => r.url);
    const has = (re: RegExp) => urls.some((u) => re.test(u));
    expect(has(/\/\/docs\.google\.com\//)).toBe(true);
    expect(has(/\/\/raw\.githubusercontent\.com\//)).toBe(true);
    expect(has(/\.blogspot\.com\//)).toBe(true);
    expect(has(/\/\/(?:github\.io|co\.uk|blogspot\.com)\//)).toBe(true);
    expect(has(/\/\/[^/]*[^\x00-\x7f]/)).toBe(true);
    expect(has(/\/\/45\.\d+\.\d+\.\d+\//)).toBe(true);
    expect(has(/:8080\//)).toBe(true);
    expect(has(/\/\/user:secret@/)).toBe(true);
    expect(has(/%2e%2E/)).toBe(true);
    expect(has(/^HTTPS?:\/\/[A-Z0-9.-]+\//)).toBe(true);
    expect(urls.filter((u) => !URL.canParse(u)).length).toBeGreaterThan(50);
    const hosts = new Set(urls.filter((u) => URL.canParse(u)).map((u) => new URL(u).hostname));
    expect(hosts.size).toBeLessThan(urls.length / 4); // many URLs per host
  });

  it('is deterministic per seed', async () => {
    const again = await startSimulator({ urls: 20_000, seed: 5, now: NOW });
    const other = await startSimulator({ urls: 20_000, seed: 6, now: NOW });
    try {
      const a = (await getJson<UrlPage>(sim, '/urls?limit=200')).body.body;
      expect((await getJson<UrlPage>(again, '/urls?limit=200')).body.body).toEqual(a);
      expect((await getJson<UrlPage>(other, '/urls?limit=200')).body.body).not.toEqual(a);
    } finally {
      await again.close();
      await other.close();
    }
  });

  it('serves a million URLs lazily: the last page is reachable by ts', async () => {
    const big = await startSimulator({ urls: 1_000_000, seed: 1, now: NOW });
    try {
      const r = await getJson<UrlPage>(big, `/urls?ts=${NOW - 60}&limit=1999`);
      expect(r.status).toBe(200);
      expect(r.body.body.length).toBeGreaterThan(0);
      expect(r.body.body.every((i) => i.ts >= NOW - 60)).toBe(true);
    } finally {
      await big.close();
    }
  });

  it('fault modes apply to /urls', async () => {
    sim.setFault('http500', { routes: ['GET /urls'], count: 1 });
    expect((await getJson(sim, '/urls')).status).toBe(500);
    sim.setFault('empty', { routes: ['GET /urls'], count: 1 });
    expect((await getJson<UrlPage>(sim, '/urls')).body.body).toEqual([]);
    sim.setFault('wrongTypes', { routes: ['GET /urls'], count: 1 });
    expect(typeof (await getJson<UrlPage>(sim, '/urls?limit=200')).body.body[0]!.score).toBe('string');
    sim.setFault('oversized', { routes: ['GET /urls'], count: 1 });
    expect((await getJson<UrlPage>(sim, '/urls?limit=200')).body.body.length).toBeGreaterThan(200);
    sim.setFault('truncated', { routes: ['GET /urls'], count: 1 });
    const r = await fetch(`${sim.url}/urls`, { headers: { authorization: sim.token } });
    await expect(r.json()).rejects.toThrow();
    sim.setFault(null);
  });
});

describe('PUT /urls/{url} (E5)', () => {
  const target = 'https://login.evil-example.com/a b?x=1';
  const put = (url: string, decision: unknown) => send(sim, 'PUT', `/urls/${encodeURIComponent(url)}`, { decision });

  it('re-stamps the record and sets the decision tags; -1 clears them', async () => {
    sim.clock.set(NOW + 100);
    expect((await put(target, 1)).status).toBe(200);
    let rec = sim.urlRecord(target)!;
    expect(rec.ts).toBe(NOW + 100);
    expect(rec.tags).toContain('blacklisted');
    const page = await getJson<UrlPage>(sim, `/urls?ts=${NOW + 100}&limit=101`);
    expect(page.body.body.map((i) => i.url)).toContain(target);
    sim.clock.set(NOW + 200);
    await put(target, 0);
    rec = sim.urlRecord(target)!;
    expect(rec.tags).toContain('whitelisted');
    expect(rec.tags).not.toContain('blacklisted');
    expect(rec.ts).toBe(NOW + 200);
    await put(target, -1);
    expect(sim.urlRecord(target)!.tags.filter((t) => t === 'whitelisted' || t === 'blacklisted')).toEqual([]);
    sim.clock.set(NOW);
  });

  it('rejects a bad decision or URL with a 400 naming the field', async () => {
    const r = await put(target, 2);
    expect(r.status).toBe(400);
    expect((r.json as { message: string }).message).toMatch(/^decision: /);
    const u = await put('not a url', 1);
    expect(u.status).toBe(400);
    expect((u.json as { message: string }).message).toMatch(/^url: /);
    expect((await send(sim, 'PUT', '/urls/', { decision: 1 })).status).toBe(404);
  });
});

describe('GET /files/{digest} (E6)', () => {
  const sha = 'ab'.repeat(32);
  it('finds an added file by any digest, upper-case hex in the record; deep finds what NO does not', async () => {
    const rec = sim.addFile({ sha256: sha, score: 9 });
    let r = await getJson<{ sha256: string; md5: string; score: number }>(sim, `/files/${sha}`);
    expect(r.status).toBe(200);
    expect(r.body.sha256).toBe(sha.toUpperCase());
    expect((await getJson(sim, `/files/${rec.md5.toLowerCase()}`)).status).toBe(200);
    const deepOnly = 'cd'.repeat(20);
    sim.addFile({ sha1: deepOnly, deep: true });
    expect((await getJson(sim, `/files/${deepOnly}`)).status).toBe(404);
    expect((await getJson(sim, `/files/${deepOnly}?deep=NO`)).status).toBe(404);
    r = await getJson(sim, `/files/${deepOnly}?deep=YES`);
    expect(r.status).toBe(200);
  });

  it('deep=YES finds generated digests that NO does not; unknown 404; malformed 400', async () => {
    let deepOnly = 0;
    let unknown = 0;
    for (let k = 0; k < 200; k++) {
      const d = k.toString(16).padStart(32, '0');
      const no = (await getJson(sim, `/files/${d}`)).status;
      const yes = (await getJson(sim, `/files/${d}?deep=YES`)).status;
      if (no === 404 && yes === 200) deepOnly++;
      if (yes === 404) unknown++;
      expect(no === 200 ? yes : 200).toBe(200); // what NO finds, YES finds too
    }
    expect(deepOnly).toBeGreaterThan(0);
    expect(unknown).toBeGreaterThan(0);
    const bad = await getJson<{ message: string }>(sim, '/files/xyz');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^digest: /);
    expect((await getJson<{ message: string }>(sim, `/files/${sha}?deep=yes`)).body.message).toMatch(/^deep: /);
  });
});
