import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startSimulator } from './index.js';
import { getJson, reachable, walkFeed, type FeedPageWire } from './test-helpers.js';

const NOW = 1_795_000_000;

describe('paging (contract section 1)', () => {
  it('walks all 1000 indicators in pages of 100, across a same-ts run straddling a page boundary', async () => {
    const sim = await startSimulator({ indicators: 1000, seed: 5, now: NOW });
    try {
      const run = sim.data.sameTsRuns.find((r) => r.startIndex < 100 && r.startIndex + r.count > 100)!;
      expect(run).toBeDefined();
      const w = await walkFeed(sim, { limit: 100 });
      const first = w.pages[0]!;
      expect(first.at(-1)!.ts).toBe(run.ts);
      expect(w.pages[1]![0]!.ts).toBe(run.ts); // asked again from the run's ts
      expect(w.byIp.size).toBe(1000);
      expect(new Set(w.byIp.keys())).toEqual(new Set([...sim.indicators()].map((x) => x.ip)));
      for (const p of w.pages) for (let k = 1; k < p.length; k++) expect(p[k]!.ts).toBeGreaterThanOrEqual(p[k - 1]!.ts);
    } finally {
      await sim.close();
    }
  });

  it('with a run of more than `limit` equal ts, the walk ends and sees exactly the reachable items', async () => {
    const sim = await startSimulator({ indicators: 6000, seed: 2, now: NOW });
    try {
      const big = sim.data.sameTsRuns.find((r) => r.count > 1000)!;
      expect(big.count).toBe(1500);
      const w = await walkFeed(sim, { limit: 1000 });
      // a full page holds items before the run and the run's start: the run straddles a boundary
      expect(w.pages.some((p) => p.length === 1000 && p[0]!.ts < big.ts && p.at(-1)!.ts === big.ts)).toBe(true);
      // and one full page is nothing but the run (the walker then steps to ts+1)
      expect(w.pages.some((p) => p.length === 1000 && p.every((x) => x.ts === big.ts))).toBe(true);
      const all = [...sim.indicators()];
      const expected = reachable(all, 1000);
      expect(all.length - expected.length).toBe(big.count - 1000);
      expect([...w.byIp.keys()].sort()).toEqual(expected.map((x) => x.ip).sort());
    } finally {
      await sim.close();
    }
  });

  it('property: for any seed/size/limit/filter/start and overlay edits, the walk returns exactly the reachable items', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          seed: fc.integer(),
          n: fc.integer({ min: 0, max: 2500 }),
          limit: fc.integer({ min: 1, max: 1000 }),
          filter: fc.constantFrom(0, 1, 2, 3),
          at: fc.nat(),
          edits: fc.array(fc.record({ k: fc.nat(), op: fc.constantFrom('update', 'remove', 'add', 'block', 'white'), dt: fc.integer({ min: -2000, max: 100 }) }), { maxLength: 20 }),
        }),
        async ({ seed, n, limit, filter, at, edits }) => {
          const sim = await startSimulator({ indicators: n, seed, now: NOW });
          try {
            const base = [...sim.indicators()];
            const present = new Set(base.map((x) => x.ip));
            for (const [j, e] of edits.entries()) {
              const victim = base.length ? base[e.k % base.length]!.ip : `192.0.2.${j}`;
              const ts = Math.max(0, NOW + e.dt); // ties with base ts are likely for dt < 0
              if (e.op === 'update') sim.upsertIndicator({ ip: victim, ts, score: 5 });
              else if (e.op === 'remove') sim.removeIndicator(victim);
              else if (e.op === 'add') sim.upsertIndicator({ ip: `192.0.2.${j}`, ts, gid: sim.data.ownGid });
              else sim.setDecision(victim, e.op === 'block' ? 1 : 0);
              if (e.op === 'remove') present.delete(victim);
              else present.add(e.op === 'add' ? `192.0.2.${j}` : victim);
            }
            const all = [...sim.indicators()];
            expect(new Set(all.map((x) => x.ip))).toEqual(present);
            expect(all.length).toBe(present.size);
            for (let k = 1; k < all.length; k++) expect(all[k]!.ts).toBeGreaterThanOrEqual(all[k - 1]!.ts);
            const items = [...sim.indicators(filter as 0 | 1 | 2 | 3)];
            const want = filter === 1 ? (x: { gid: string }) => x.gid === sim.data.ownGid : filter === 2 ? (x: { decision: number }) => x.decision === 1 : filter === 3 ? (x: { decision: number }) => x.decision === 0 : () => true;
            expect(items).toEqual(all.filter((x) => want(x as never)));
            const from = items.length ? items[at % items.length]!.ts : 0;
            const w = await walkFeed(sim, { limit, filter, from });
            const expected = reachable(
              items.filter((x) => x.ts >= from),
              limit,
            );
            expect([...w.byIp.keys()].sort()).toEqual(expected.map((x) => x.ip).sort());
          } finally {
            await sim.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('an updated indicator appears once, at the end; a removed one disappears', async () => {
    const sim = await startSimulator({ indicators: 500, seed: 4, now: NOW });
    try {
      const [a, b] = [...sim.indicators()];
      sim.clock.advance(100);
      sim.upsertIndicator({ ip: a!.ip, score: 9.9 });
      sim.removeIndicator(b!.ip);
      sim.upsertIndicator({ ip: '192.0.2.77' });
      const w = await walkFeed(sim, { limit: 50 });
      const ips = w.pages.flat().map((x) => x.ip);
      expect(ips.filter((x) => x === a!.ip)).toHaveLength(1);
      expect(ips).not.toContain(b!.ip);
      expect(ips.slice(-2)).toEqual([a!.ip, '192.0.2.77']);
      expect(w.byIp.get(a!.ip)).toMatchObject({ ts: NOW + 100, score: 9.9 });
      expect(w.byIp.size).toBe(500);
      // incremental pull from the old cursor sees only the changes
      const inc = await getJson<FeedPageWire>(sim, `/ips?ts=${NOW}`);
      expect(inc.body.body.map((x) => x.ip)).toEqual([a!.ip, '192.0.2.77']);
    } finally {
      await sim.close();
    }
  });

  it('is deterministic: same seed, same first page; different seed, different page', async () => {
    const page = async (seed: number): Promise<string> => {
      const sim = await startSimulator({ indicators: 300, seed, now: NOW });
      try {
        const r = await getJson<FeedPageWire>(sim, '/ips?limit=50&full=yes');
        return JSON.stringify(r.body.body);
      } finally {
        await sim.close();
      }
    };
    expect(await page(1)).toBe(await page(1));
    expect(await page(1)).not.toBe(await page(2));
  });
});
