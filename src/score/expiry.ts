/**
 * When does a decayed score drop below the threshold? Both solvers answer in seconds from `t`
 * (not absolute), with the semantics of `Scoring.secondsUntilBelow`:
 *   - threshold <= 0 (or NaN): scores are never negative, so never below: null;
 *   - S <= 0 or non-finite: the score is 0, already below: 0;
 *   - score(t) < threshold already: 0;
 *   - still >= threshold `horizon` seconds after t: null.
 * Both run in hot loops (up to ~1e6 / ~1e5 calls per sync): no allocation inside.
 */
import type { ScoreFn } from './formula.js';

/** Ten years, in seconds. */
export const DEFAULT_HORIZON_S = 10 * 365 * 86_400;

/**
 * Closed form for the built-in decay score(t) = S / (1 + exp((3/S) * (t/3600 - 2.5 S))).
 * It decreases strictly from score(0) = S / (1 + exp(-7.5)) towards 0, so for 0 < T < S:
 *   score(τ) = T  ⇔  exp((3/S)(τ/3600 - 2.5 S)) = S/T - 1  ⇔  τ = 3600 (2.5 S + (S/3) ln((S - T) / T)).
 * T >= S cannot be reached from above (score < S everywhere), which the `score(t) < T` test covers.
 */
export function builtinSecondsUntilBelow(S: number, t: number, threshold: number, horizon: number = DEFAULT_HORIZON_S): number | null {
  if (!(threshold > 0)) return null;
  if (!(S > 0) || S === Infinity) return 0;
  const t0 = t > 0 ? t : 0;
  const now = S / (1 + Math.exp((3 / S) * (t0 / 3600 - 2.5 * S)));
  if (!(now >= threshold)) return 0;
  // Here threshold <= now < S, so (S - T) / T > 0.
  const tau = 3600 * (2.5 * S + (S / 3) * Math.log((S - threshold) / threshold));
  const d = tau - t0;
  if (!(d <= horizon)) return null;
  return d > 0 ? d : 0;
}

/** score - T, with a non-finite or negative score read as 0 (as `Scoring.score` does). */
function gap(fn: ScoreFn, S: number, x: number, threshold: number): number {
  const v = fn(S, x);
  return (v >= 0 && v < Infinity ? v : 0) - threshold;
}

const MAX_BISECT = 60;
/** Bisection stops once the bracket is narrower than min(1e-6 s, 1e-12 * elapsed time) + 1e-9 s. */
const REL_TOL = 1e-12;
const MAX_TOL_S = 1e-6;
const ABS_TOL_S = 1e-9;

/**
 * Numeric solver for any ScoreFn that is non-increasing in t: bracket by doubling a step from `t`
 * (1 s, 2 s, 4 s, ... capped at the horizon), then bisect. Returns the upper end of the final
 * bracket, so score(t + result) < threshold holds exactly (the "first instant below").
 * The tolerance is 1e-6 s, tightened to 1e-12 of the elapsed time for short decays (a 90 s decay
 * of a small score is steep: 1e-6 s there would be ~1e-7 of the score), so the score at the
 * returned instant is within ~1e-10 relative of the threshold for steep and slow decays alike.
 */
export function numericSecondsUntilBelow(fn: ScoreFn, S: number, t: number, threshold: number, horizon: number = DEFAULT_HORIZON_S): number | null {
  if (!(threshold > 0)) return null;
  if (!(S > 0) || S === Infinity) return 0;
  const t0 = t > 0 ? t : 0;
  if (gap(fn, S, t0, threshold) < 0) return 0;
  if (!(horizon > 0)) return null;
  const end = t0 + horizon;
  let lo = t0; // invariant: score(lo) >= threshold
  let hi: number; // invariant: score(hi) < threshold
  for (let step = 1; ; step *= 2) {
    hi = t0 + step < end ? t0 + step : end;
    if (gap(fn, S, hi, threshold) < 0) break;
    if (hi >= end) return null;
    lo = hi;
  }
  for (let i = 0; i < MAX_BISECT && hi - lo > Math.min(MAX_TOL_S, REL_TOL * hi) + ABS_TOL_S; i++) {
    const mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (gap(fn, S, mid, threshold) < 0) hi = mid;
    else lo = mid;
  }
  return hi - t0;
}
