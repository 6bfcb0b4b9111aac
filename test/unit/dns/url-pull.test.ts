import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../../src/api/client.js';
import { UrlApi } from '../../../src/api/url-api.js';
import type { UrlPage } from '../../../src/api/wire.js';
import { ApiStatusError } from '../../../src/errors.js';
import { hostOfUrl } from '../../../src/feed/host.js';
import { pullUrls, type UrlSource } from '../../../src/feed/url-pull.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';

const logger = pino({ level: 'silent' });

function client(sim: Simulator): ApiClient {
  return new ApiClient({
    baseUrl: sim.url, token: sim.token, authScheme: 'bearer', connectTimeoutMs: 2000, requestTimeoutMs: 5000,
    retries: 0, maxResponseBytes: 64 << 20, userAgent: 'test', logger,
  });
}

describe('URL feed pull against the simulator', () => {
  let sim: Simulator;
  let api: UrlApi;
  beforeAll(async () => {
    sim = await startSimulator({ urls: 30_000, seed: 9 });
    api = new UrlApi(client(sim));
  });
  afterAll(async () => {
    await api.client.close();
    await sim.close();
  });

  it('a full pull sees every URL once, folded per host; malformed URLs are counted, not kept', async () => {
    const r = await pullUrls(api, { fromTs: 0, logger });
    const records = [...sim.urlRecords()];
    const usable = records.filter((u) => hostOfUrl(u.url).kind !== 'invalid');
    expect(r.urls.size).toBe(usable.length);
    expect(r.urls.invalid).toBe(records.length - usable.length);
    expect(r.urls.invalid).toBeGreaterThan(0);
    expect(r.cursor).toBe(Math.max(...records.map((u) => u.ts)));
    expect(r.urls.hosts.length).toBeLessThan(usable.length / 4);
  });

  it('an incremental pull from the cursor brings what changed since (an E5 decision re-stamps a URL)', async () => {
    const full = await pullUrls(api, { fromTs: 0, logger });
    sim.clock.advance(10);
    sim.decideUrl('https://new.example/x', 1);
    const inc = await pullUrls(api, { fromTs: full.cursor, logger });
    expect(inc.urls.hosts).toContain('new.example');
    expect(inc.pages).toBe(1);
  });

  it('any failed page fails the whole pull', async () => {
    sim.setFault('http500', { routes: ['GET /urls'], skipRequests: 2 });
    await expect(pullUrls(api, { fromTs: 0, logger })).rejects.toBeInstanceOf(ApiStatusError);
    sim.setFault(null);
  });
});

describe('URL feed paging edge cases', () => {
  it('steps past a full page whose next_ts does not move, without looping', async () => {
    const calls: number[] = [];
    const src: UrlSource = {
      async urlPage(ts, limit): Promise<UrlPage> {
        calls.push(ts);
        if (calls.length > 50) throw new Error('looping');
        const body = ts <= 100 ? Array.from({ length: limit }, (_, i) => ({ url: `http://h${i}.example/`, score: 5, ts: 100 })) : [{ url: 'http://last.example/', score: 5, ts: 101 }];
        return { header: { next_ts: ts }, body };
      },
    };
    const r = await pullUrls(src, { fromTs: 0, logger, limit: 101 });
    expect(calls).toEqual([0, 100, 101]);
    expect(r.urls.size).toBe(102);
    expect(r.cursor).toBe(101);
  });
});

describe('URL page validation', () => {
  it('the fast path accepts exactly what the schema accepts, and the schema words the problems', async () => {
    const { acceptUrlPage, urlPageSchema } = await import('../../../src/api/wire.js');
    const good = { header: { next_ts: 5 }, body: [{ url: 'http://a.example/', score: 5, ts: 1, tags: ['x'], extra: 1 }] };
    expect(acceptUrlPage(good)).toBeDefined();
    expect(urlPageSchema.safeParse(good).success).toBe(true);
    const bads = [
      { header: {}, body: [{ url: 'http://a.example/', score: '5', ts: 1 }] },
      { header: {}, body: [{ url: 'http://a.example/', score: 5, ts: -1 }] },
      { header: {}, body: [{ url: 'http://a.example/', score: 5, ts: 1, tags: [1] }] },
      { header: { next_ts: 'x' }, body: [] },
      { header: {}, body: {} },
    ];
    for (const b of bads) {
      expect(acceptUrlPage(b)).toBeUndefined();
      expect(urlPageSchema.safeParse(b).success).toBe(false);
    }
  });

  it('a page of the wrong shape fails the pull with the field named', async () => {
    const sim = await startSimulator({ urls: 500, seed: 1 });
    const api = new UrlApi(client(sim));
    try {
      sim.setFault('wrongTypes', { routes: ['GET /urls'] });
      await expect(pullUrls(api, { fromTs: 0, logger })).rejects.toThrow(/body\.0\.score/);
    } finally {
      await api.client.close();
      await sim.close();
    }
  });
});
