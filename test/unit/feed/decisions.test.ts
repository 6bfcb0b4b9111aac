// The two manual-decision feeds merged: what a poll brought onto what is known, and a full pull on
// its own. One record per address across both feeds, the newest; ties as documented.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeDecisions, newestDecisions, type DecisionFeeds } from '../../../src/feed/decisions.js';
import type { IndicatorMap } from '../../../src/feed/indicator.js';
import { indicatorMap } from '../../helpers/indicator-map.js';

const rows = (m: IndicatorMap) => [...m].map((i) => `${i.cidr.text}@${i.ts}`).sort();
const feeds = (blocks: [string, number][], white: [string, number][]): DecisionFeeds => ({ manualBlocks: indicatorMap(blocks), whitelist: indicatorMap(white) });
const shown = (f: DecisionFeeds) => ({ blocks: rows(f.manualBlocks), white: rows(f.whitelist) });

describe('a poll merged onto what is known', () => {
  it('new records join their feed; an address that moved to the other feed leaves this one', () => {
    const known = feeds(
      [['192.0.2.1', 10], ['192.0.2.2', 10]],
      [['198.51.100.1', 10]],
    );
    const polled = feeds([['198.51.100.1', 20]], [['192.0.2.2', 20]]);
    expect(shown(mergeDecisions(known, polled))).toEqual({ blocks: ['192.0.2.1@10', '198.51.100.1@20'], white: ['192.0.2.2@20'] });
  });

  it("an older whitelist record arriving while the address's manual block is newer does not unblock it", () => {
    const known = feeds([['192.0.2.5', 30]], []);
    expect(shown(mergeDecisions(known, feeds([], [['192.0.2.5', 29]])))).toEqual({ blocks: ['192.0.2.5@30'], white: [] });
  });

  it('nor does an older manual block arriving while the address is whitelisted more recently block it', () => {
    const known = feeds([], [['192.0.2.6', 30]]);
    expect(shown(mergeDecisions(known, feeds([['192.0.2.6', 29]], [])))).toEqual({ blocks: [], white: ['192.0.2.6@30'] });
  });

  it('both feeds answered a moment apart, in one poll: the newer record wins, whichever feed it is in', () => {
    const known = feeds([], [['192.0.2.7', 40]]);
    // The whitelist's answer still has the address at 40; the manual blocks' answer, a moment later, at 41.
    expect(shown(mergeDecisions(known, feeds([['192.0.2.7', 41]], [['192.0.2.7', 40]])))).toEqual({ blocks: ['192.0.2.7@41'], white: [] });
    expect(shown(mergeDecisions(feeds([['192.0.2.7', 40]], []), feeds([['192.0.2.7', 40]], [['192.0.2.7', 41]])))).toEqual({ blocks: [], white: ['192.0.2.7@41'] });
  });

  it('within one feed an older record does not replace a newer one', () => {
    expect(shown(mergeDecisions(feeds([['192.0.2.8', 50]], []), feeds([['192.0.2.8', 45]], [])))).toEqual({ blocks: ['192.0.2.8@50'], white: [] });
  });

  it('a tie: the fresh record beats the known one (the address moved within that second); two fresh ones both stay', () => {
    expect(shown(mergeDecisions(feeds([['192.0.2.9', 60]], []), feeds([], [['192.0.2.9', 60]])))).toEqual({ blocks: [], white: ['192.0.2.9@60'] });
    expect(shown(mergeDecisions(feeds([], [['192.0.2.9', 60]]), feeds([['192.0.2.9', 60]], [])))).toEqual({ blocks: ['192.0.2.9@60'], white: [] });
    expect(shown(mergeDecisions(feeds([], []), feeds([['192.0.2.9', 60]], [['192.0.2.9', 60]])))).toEqual({ blocks: ['192.0.2.9@60'], white: ['192.0.2.9@60'] });
  });

  it('what is known is not changed in place', () => {
    const known = feeds([['192.0.2.10', 10]], []);
    mergeDecisions(known, feeds([], [['192.0.2.10', 20]]));
    expect(shown(known)).toEqual({ blocks: ['192.0.2.10@10'], white: [] });
  });

  it('any records: each address keeps its newest record, in the feed that holds it (a tie: the fresh one, or both when equally fresh)', () => {
    const addr = fc.integer({ min: 1, max: 6 }).map((n) => `192.0.2.${n}`);
    const recs = fc.array(fc.tuple(addr, fc.integer({ min: 1, max: 5 })), { maxLength: 8 });
    fc.assert(
      fc.property(recs, recs, recs, recs, (kb, kw, pb, pw) => {
        const out = shown(mergeDecisions(feeds(kb, kw), feeds(pb, pw)));
        const expected: { blocks: string[]; white: string[] } = { blocks: [], white: [] };
        for (let n = 1; n <= 6; n++) {
          const ip = `192.0.2.${n}`;
          const newestIn = (...lists: [string, number][][]) => Math.max(0, ...lists.flat().filter(([a]) => a === ip).map(([, ts]) => ts));
          const b = newestIn(kb, pb);
          const w = newestIn(kw, pw);
          if (b === 0 && w === 0) continue;
          const freshB = b > 0 && newestIn(pb) === b;
          const freshW = w > 0 && newestIn(pw) === w;
          const keepB = b > w || (b === w && (freshB || !freshW));
          const keepW = w > b || (b === w && (freshW || !freshB));
          if (keepB) expected.blocks.push(`${ip}@${b}`);
          if (keepW) expected.white.push(`${ip}@${w}`);
        }
        expect(out).toEqual({ blocks: expected.blocks.sort(), white: expected.white.sort() });
      }),
    );
  });
});

describe('a full pull of both feeds', () => {
  it('an address in both (it moved while the two feeds answered) keeps its newer record only', () => {
    const pulled = feeds(
      [['192.0.2.20', 100], ['192.0.2.21', 90]],
      [['192.0.2.20', 99], ['192.0.2.21', 95], ['192.0.2.22', 80]],
    );
    expect(shown(newestDecisions(pulled))).toEqual({ blocks: ['192.0.2.20@100'], white: ['192.0.2.21@95', '192.0.2.22@80'] });
  });
});
