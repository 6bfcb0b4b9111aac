import type { IndicatorMap } from '../../feed/indicator.js';

/**
 * How long the server's clock must be past the newest decision seen before a poll asks only for
 * records strictly newer than it. A decision set through `POST /ips` is stamped with the server's
 * time, so once that time has moved past `newest` by more than a second (the header's `ts` is
 * whole seconds, and the answer took some time), nothing posted later can carry `newest` or less.
 * Until then the poll asks from `newest` itself and gets the records of that second again: a
 * decision posted in the same second as the newest one, after the last poll, is not missed.
 */
export const SETTLED_SECONDS = 2;

/** The newest `ts` of a decision feed up to `upTo`: records stamped later do not count. */
export function newestTs(items: IndicatorMap, upTo: number): number {
  const { tss } = items.columns();
  let newest = 0;
  for (let i = 0; i < tss.length; i++) {
    const ts = tss[i]!;
    if (ts > newest && ts <= upTo) newest = ts;
  }
  return newest;
}

/**
 * The latest `ts` a poll's start may be taken from: the server's clock as its last answer gave it
 * or, without one, this host's. A record stamped beyond it (a clock ahead, a typo, a record
 * written for later) would otherwise move every poll's start past the decisions posted now, which
 * the server stamps with its own clock: they would wait for the next cycle. Such a record is
 * asked for again by every poll until the clock passes it, which costs its bytes, never a decision.
 */
export function cursorLimit(serverTs: number | undefined, now: number): number {
  return serverTs ?? now;
}

/** Where a poll of one decision feed starts: after the newest record once the server's clock has settled past it, else at it. */
export function pollStart(items: IndicatorMap, serverTs: number | undefined, now: number): number {
  const newest = newestTs(items, cursorLimit(serverTs, now));
  return serverTs !== undefined && serverTs >= newest + SETTLED_SECONDS ? newest + 1 : newest;
}
