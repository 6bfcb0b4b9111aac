import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { pullFeed, type FeedSource } from '../../../src/feed/pull.js';
import type { FeedItem, FeedPage } from '../../../src/api/wire.js';

const logger = pino({ level: 'silent' });

/** An in-memory feed that pages exactly as the contract says (ts ascending, ts >= requested, at most limit). */
function memoryFeed(items: FeedItem[]): FeedSource & { calls: { ts: number; limit: number }[] } {
  const sorted = [...items].sort((a, b) => a.ts - b.ts);
  const calls: { ts: number; limit: number }[] = [];
  return {
    calls,
    async feedPage(_filter, ts, limit): Promise<FeedPage> {
      calls.push({ ts, limit });
      if (calls.length > 1000) throw new Error('looping');
      return { header: {}, body: sorted.filter((i) => i.ts >= ts).slice(0, limit) };
    },
  };
}
const item = (ip: string, ts: number, score = 5): FeedItem => ({ ip, ts, score });

describe('pullFeed', () => {
  it('pages from the largest ts of each full page and de-duplicates the overlap', async () => {
    const items = Array.from({ length: 25 }, (_, i) => item(`192.0.2.${i}`, 100 + Math.floor(i / 2)));
    const src = memoryFeed(items);
    const r = await pullFeed(src, { filter: 0, fromTs: 0, pageSize: 10, logger });
    expect(r.items.size).toBe(25);
    expect(r.cursor).toBe(112);
    expect(src.calls.map((c) => c.ts)).toEqual([0, 104, 108]);
  });

  it('keeps the newest record of an address', async () => {
    const r = await pullFeed(memoryFeed([item('192.0.2.1', 100, 2), item('192.0.2.1', 200, 7), item('192.0.2.1/32', 150, 1)]), {
      filter: 0, fromTs: 0, pageSize: 10, logger,
    });
    expect([...r.items.values()].map((i) => [i.cidr.text, i.score])).toEqual([['192.0.2.1', 7]]);
  });

  it('does not loop when more items share one ts than a page holds', async () => {
    const same = Array.from({ length: 1500 }, (_, i) => item(`198.51.${i >> 8}.${i & 255}`, 500));
    const src = memoryFeed([...same, item('203.0.113.1', 400), item('203.0.113.2', 600)]);
    const r = await pullFeed(src, { filter: 0, fromTs: 0, pageSize: 100, logger });
    // It widens the page to the maximum, then steps past the crowded ts with a warning.
    expect(r.overfullTs).toEqual([500]);
    expect(r.items.byCidr.has('203.0.113.2')).toBe(true);
    expect(r.items.size).toBe(1 + 1000 + 1);
    expect(src.calls.length).toBeLessThan(10);
  });

  it('rejects a page larger than the limit and skips invalid addresses', async () => {
    const big: FeedSource = { feedPage: async () => ({ header: {}, body: [item('192.0.2.1', 1), item('192.0.2.2', 1)] }) };
    await expect(pullFeed(big, { filter: 0, fromTs: 0, pageSize: 1, logger })).rejects.toThrow(/more than the requested limit 1/);
    const r = await pullFeed(memoryFeed([item('not-an-ip', 1), item('127.1', 2), item('192.0.2.9', 3)]), { filter: 0, fromTs: 0, pageSize: 10, logger });
    expect(r.invalid).toBe(2);
    expect(r.items.size).toBe(1);
  });

  it('stops a server that never stops paging: fails after maxPages pages', async () => {
    // Every page is full and moves on by one ts: a broken or hostile server could page forever.
    let calls = 0;
    const endless: FeedSource = {
      feedPage: async (_filter, ts, limit) => {
        calls++;
        return { header: {}, body: Array.from({ length: limit }, (_, i) => item(`10.${calls & 255}.${i >> 8}.${i & 255}`, ts + 1)) };
      },
    };
    await expect(pullFeed(endless, { filter: 0, fromTs: 0, pageSize: 10, logger, maxPages: 5 })).rejects.toMatchObject({
      code: 'WCF_ERR_API_RESPONSE',
      message: expect.stringMatching(/still paging after 5 pages/),
    });
    expect(calls).toBe(5);
  });
});
