import { FUTURE_TOLERANCE_S } from '../../feed/pull.js';
import { IndicatorMap } from '../../feed/indicator.js';

/**
 * How long the server's clock must be past the newest decision seen before a poll asks only for
 * records strictly newer than it. A decision set through `POST /ips` is stamped with the server's
 * time, so once that time has moved past `newest` by more than a second (the header's `ts` is
 * whole seconds, and the answer took some time), nothing posted later can carry `newest` or less.
 * Until then the poll asks from `newest` itself and gets the records of that second again: a
 * decision posted in the same second as the newest one, after the last poll, is not missed.
 */
export const SETTLED_SECONDS = 2;

/** The newest `ts` of a decision feed, leaving out records stamped beyond the agent's clock (as the feed cursor does). */
export function newestTs(items: IndicatorMap, now: number): number {
  const { tss } = items.columns();
  let newest = 0;
  for (let i = 0; i < tss.length; i++) {
    const ts = tss[i]!;
    if (ts > newest && ts <= now + FUTURE_TOLERANCE_S) newest = ts;
  }
  return newest;
}

/** Where a poll of one decision feed starts: after the newest record once the server's clock has settled past it, else at it. */
export function pollStart(items: IndicatorMap, serverTs: number | undefined, now: number): number {
  const newest = newestTs(items, now);
  return serverTs !== undefined && serverTs >= newest + SETTLED_SECONDS ? newest + 1 : newest;
}

/**
 * A decision feed as last known, with the records a poll brought: theirs win (each carries the
 * indicator's decision as of its newer `ts`). `moved` are the records the poll found in the
 * other decision feed: an address now whitelisted is no longer manually blocked, and the
 * reverse, unless this feed holds a newer record of it. A withdrawal (decision -1) is in
 * neither answer: the next cycle's full pulls notice it.
 */
export function mergePolled(known: IndicatorMap, polled: IndicatorMap, moved: IndicatorMap): IndicatorMap {
  const out = new IndicatorMap(known.size + polled.size);
  const k = known.columns();
  for (let i = 0; i < known.size; i++) {
    const at = moved.find(k.starts[i]!, k.prefixes[i]!);
    if (at !== -1 && moved.tsAt(at) >= k.tss[i]!) continue;
    out.upsertParts(k.starts[i]!, k.prefixes[i]!, k.tss[i]!, k.scores[i]!);
  }
  out.merge(polled);
  return out;
}
