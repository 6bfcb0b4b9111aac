import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { StateStore } from '../../../../src/agent/state/store.js';
import { IndicatorMap } from '../../../../src/feed/indicator.js';
import { fromNumber } from '../../../../src/net/ipv4.js';

function store() {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-cache-'));
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (l: string) => void warnings.push((JSON.parse(l) as { msg: string }).msg) });
  return { dir, warnings, state: new StateStore(dir, logger) };
}

function sample(n: number): IndicatorMap {
  const m = new IndicatorMap();
  for (let i = 0; i < n; i++) m.upsert({ cidr: fromNumber((0xc6120000 + i * 256) >>> 0, i % 5 === 0 ? 24 : 32), ts: 1_700_000_000 + i, score: (i % 97) / 9.7 });
  return m;
}
const rows = (m: IndicatorMap | undefined) => (m ? [...m.values()].map((i) => [i.cidr.text, i.ts, i.score]) : m);

describe('feed cache', () => {
  it('reads back exactly what was written, in the same order', () => {
    const { state } = store();
    for (const n of [0, 1, 3000]) {
      const m = sample(n);
      state.saveFeedCache(m);
      expect(rows(state.loadFeedCache())).toEqual(rows(m));
    }
  });

  it('a truncated or foreign file means no cache (a full pull), with a warning', () => {
    const { dir, state, warnings } = store();
    expect(state.loadFeedCache()).toBeUndefined();
    state.saveFeedCache(sample(10));
    const path = join(dir, 'feed-cache.bin');
    truncateSync(path, readFileSync(path).length - 1);
    expect(state.loadFeedCache()).toBeUndefined();
    writeFileSync(path, JSON.stringify({ version: 1, rows: [] }));
    expect(state.loadFeedCache()).toBeUndefined();
    expect(warnings.filter((w) => /unknown format/.test(w))).toHaveLength(2);
  });
});
