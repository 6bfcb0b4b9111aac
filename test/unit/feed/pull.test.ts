import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { FUTURE_TOLERANCE_S, feedItemCap, pullFeed, type FeedSource } from '../../../src/feed/pull.js';
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

  it('an item stamped far ahead of the agent clock is kept, counted and logged, and never moves the cursor', async () => {
    const now = 1_795_000_000;
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    const feed = [item('192.0.2.1', now - 100), item('192.0.2.2', now + 60), item('192.0.2.3', now + 10 * 365 * 86_400)];
    const r = await pullFeed(memoryFeed(feed), { filter: 0, fromTs: 0, pageSize: 10, logger: log, now });
    expect(r.items.size).toBe(3);
    expect(r.future).toBe(1);
    expect(r.cursor).toBe(now + 60); // a little skew (within the tolerance) still counts
    expect(r.cursor).toBeLessThanOrEqual(now + FUTURE_TOLERANCE_S);
    expect(lines.join('')).toMatch(/1 feed items are stamped more than 600 s ahead/);
  });

  it('a server that never stops paging is refused after maxItems items, long before maxPages', async () => {
    let calls = 0;
    const endless: FeedSource = {
      async feedPage(_f, ts, limit) {
        calls++;
        return { header: {}, body: Array.from({ length: limit }, (_, k) => item(`11.${(calls >> 8) & 255}.${calls & 255}.${k}`, ts + 1)) };
      },
    };
    await expect(pullFeed(endless, { filter: 0, fromTs: 0, pageSize: 100, logger, maxItems: 2_000 })).rejects.toThrow(/still paging after 2000 items in 20 pages/);
    expect(calls).toBe(20);
  });

  it('the item cap: what can be used (4 x maximum_rules), twice the largest feed seen, never under a million', () => {
    expect(feedItemCap(10_000)).toBe(1_000_000);
    expect(feedItemCap(2_000_000)).toBe(8_000_000);
    expect(feedItemCap(10_000, 900_000)).toBe(1_800_000);
  });

  it('an invalid address quoted in the skip warning has its control characters escaped', async () => {
    const lines: string[] = [];
    const log = pino({ level: 'warn' }, { write: (l: string) => lines.push(l) });
    await pullFeed(memoryFeed([item('1.2\u009b\u001b]0;x', 100), item('192.0.2.1', 100)]), { filter: 0, fromTs: 0, pageSize: 10, logger: log });
    const msg = (JSON.parse(lines[0]!) as { msg: string }).msg;
    expect(msg).toMatch(/^feed item skipped: body\.0\.ip: not an IPv4 address: "1\.2\\x9b\\u001b\]0;x"$/);
    expect(msg).not.toMatch(/[\u0000-\u001f\u0080-\u009f]/);
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
