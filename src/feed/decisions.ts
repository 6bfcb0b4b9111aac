import { IndicatorMap } from './indicator.js';

/** The two manual-decision feeds of GET /ips: blocks (`filter=2`) and the whitelist (`filter=3`). */
export interface DecisionFeeds {
  manualBlocks: IndicatorMap;
  whitelist: IndicatorMap;
}

/**
 * The decisions as known, with what a pull or poll brought (`fresh`), one record per address
 * across both feeds: the newest. A decision set through `POST /ips` gives the indicator's record
 * a new `ts`, so of two records of one address in the two feeds the newer is its decision now;
 * the older comes from an answer given before the change (the two feeds are asked a moment apart,
 * or a cache answered with what it kept). Within one feed the newer record of an address wins too.
 * On a tie, a fresh record beats a known one (it moved within the second); two fresh records of
 * the same second both stay, and the whitelist prevails in the selection, as it does over any
 * manual block. A withdrawal (decision -1) is in neither feed: only a full pull, which replaces
 * what is known (`newestDecisions`), notices it.
 */
export function mergeDecisions(known: DecisionFeeds, fresh: DecisionFeeds): DecisionFeeds {
  const blocks = union(known.manualBlocks, fresh.manualBlocks);
  const white = union(known.whitelist, fresh.whitelist);
  return { manualBlocks: newerThanOther(blocks, fresh.manualBlocks, white, fresh.whitelist), whitelist: newerThanOther(white, fresh.whitelist, blocks, fresh.manualBlocks) };
}

/** A full pull of both decision feeds on its own: an address in both keeps its newer record. */
export function newestDecisions(pulled: DecisionFeeds): DecisionFeeds {
  return mergeDecisions({ manualBlocks: new IndicatorMap(), whitelist: new IndicatorMap() }, pulled);
}

function union(a: IndicatorMap, b: IndicatorMap): IndicatorMap {
  const out = new IndicatorMap(a.size + b.size);
  out.merge(a);
  out.merge(b);
  return out;
}

/** Whether `map` holds exactly this record (address and ts). */
function holds(map: IndicatorMap, start: number, prefix: number, ts: number): boolean {
  const at = map.find(start, prefix);
  return at !== -1 && map.tsAt(at) === ts;
}

/** The records of `self` that the other feed does not hold a newer record of (see mergeDecisions for ties). */
function newerThanOther(self: IndicatorMap, selfFresh: IndicatorMap, other: IndicatorMap, otherFresh: IndicatorMap): IndicatorMap {
  const out = new IndicatorMap(self.size);
  const c = self.columns();
  for (let i = 0; i < self.size; i++) {
    const start = c.starts[i]!;
    const prefix = c.prefixes[i]!;
    const ts = c.tss[i]!;
    const at = other.find(start, prefix);
    if (at !== -1) {
      const theirs = other.tsAt(at);
      if (theirs > ts) continue;
      if (theirs === ts && holds(otherFresh, start, prefix, ts) && !holds(selfFresh, start, prefix, ts)) continue;
    }
    out.upsertParts(start, prefix, ts, c.scores[i]!);
  }
  return out;
}
