import { IndicatorMap, toIndicator } from '../../src/feed/indicator.js';

/** An IndicatorMap of `[address or CIDR, ts]` rows, score 1 each (decision feeds in unit tests). */
export function indicatorMap(rows: readonly (readonly [string, number])[]): IndicatorMap {
  const m = new IndicatorMap();
  for (const [ip, ts] of rows) {
    const r = toIndicator({ ip, ts, score: 1 });
    if (!r.ok) throw new Error(`${ip}: ${r.error}`);
    m.upsert(r.indicator);
  }
  return m;
}
