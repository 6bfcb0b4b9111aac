/**
 * Score decay (see docs/daemon.md, How a sync works): the built-in formula, or the feed header's formula when it
 * parses with the whitelisted grammar (./formula.ts) and behaves like a decay.
 */
import { parseFormula, type ScoreFn } from './formula.js';
import { builtinSecondsUntilBelow, numericSecondsUntilBelow } from './expiry.js';
import { escapeControls } from '../util/terminal-text.js';

/** score(t) = S / (1 + exp((3 / S) * (t / 3600 - 2.5 * S))): raw, no guards (see Scoring.score). */
export const builtinScore: ScoreFn = (S, t) => S / (1 + Math.exp((3 / S) * (t / 3600 - 2.5 * S)));

export interface Scoring {
  readonly source: 'header' | 'builtin';
  /** How secondsUntilBelow is answered: the built-in's closed form, or bisection on the header formula. */
  readonly expiry: 'closed-form' | 'numeric';
  /** decayed score for an item of score S, elapsed seconds t (t<0 treated as 0); S<=0 or non-finite S → 0; a non-finite or negative result → 0 */
  score(S: number, t: number): number;
  /** seconds from `t` until the decayed score drops below `threshold` (first instant score < threshold); 0 if already below; null if it stays >= threshold for the whole horizon (default 10 years) */
  secondsUntilBelow(S: number, t: number, threshold: number): number | null;
}

const DAY = 86_400;
/** Sanity grid: S in (0, 10], t in [0, 30 days], sorted ascending. */
const SANITY_S = [0.01, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 7.5, 9, 10];
const SANITY_T = [...new Set([0, 1, 10, 30, 60, 120, 300, 600, 1800, ...Array.from({ length: 30 * 24 + 1 }, (_, h) => h * 3600)])].sort((a, b) => a - b);
/** Agreement grid (wider: the closed form answers up to the horizon): absolute times, plus around each S's midpoint 9000 S. */
const AGREE_S = [0.01, 0.1, 0.5, 1, 2, 3, 5, 7.5, 10, 20, 50, 100];
const AGREE_T = [0, 1, 60, 3600, DAY, 7 * DAY, 30 * DAY, 365 * DAY, 3650 * DAY];
const AGREE_MID = [0.1, 0.5, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.2, 1.5, 2, 3, 5, 10];

/**
 * Every score must fall below the lowest threshold an agent can use (score_threshold is an
 * integer >= 1) within this time: a formula that never decays (`scoreTimeZero`) would make
 * every score entry permanent.
 */
export const MUST_DECAY_WITHIN_S = 30 * DAY;
const LOWEST_THRESHOLD = 1;

/** Why `fn` is not a usable decay, or undefined if it is (finite, >= 0, non-increasing in t, below 1 within 30 days). */
function sanityError(fn: ScoreFn): string | undefined {
  for (const S of SANITY_S) {
    let prev = Infinity;
    for (const t of SANITY_T) {
      const v = fn(S, t);
      if (!Number.isFinite(v) || v < 0) return `formula gives ${v} for scoreTimeZero=${S}, current_time=${t}`;
      if (v > prev + Math.abs(prev) * 1e-12) return `formula increases with time (scoreTimeZero=${S}, current_time=${t})`;
      prev = v;
    }
    const late = fn(S, MUST_DECAY_WITHIN_S);
    if (!(late < LOWEST_THRESHOLD)) return `formula does not decay: scoreTimeZero=${S} still scores ${late} after 30 days (must fall below ${LOWEST_THRESHOLD})`;
  }
  return undefined;
}

function agreesWithBuiltin(fn: ScoreFn): boolean {
  for (const S of AGREE_S) {
    for (const t of [...AGREE_T, ...AGREE_MID.map((m) => m * 9000 * S)]) {
      const a = fn(S, t);
      const b = builtinScore(S, t);
      if (!(a === b || Math.abs(a - b) <= 1e-12 * Math.max(Math.abs(a), Math.abs(b)))) return false;
    }
  }
  return true;
}

function makeScoring(source: Scoring['source'], fn: ScoreFn, expiry: Scoring['expiry']): Scoring {
  return {
    source,
    expiry,
    score(S, t) {
      if (!(S > 0) || S === Infinity) return 0;
      const v = fn(S, t > 0 ? t : 0);
      return v >= 0 && v < Infinity ? v : 0;
    },
    secondsUntilBelow: expiry === 'closed-form'
      ? (S, t, threshold) => builtinSecondsUntilBelow(S, t, threshold)
      : (S, t, threshold) => numericSecondsUntilBelow(fn, S, t, threshold),
  };
}

/**
 * Picks the decay formula: the header's `eval`, else its `exec_python`, else the built-in. A field
 * is used only if it parses and passes the sanity check. Only when neither is usable is
 * `onRejected` called, once per present-but-rejected field (absent or blank fields are skipped).
 * A header formula that matches the built-in to 1e-12 on a grid is served by the built-in itself,
 * so score and closed-form expiry stay consistent; any other one is solved numerically.
 */
export function createScoring(
  headerFormulas: { eval?: string | undefined; exec_python?: string | undefined },
  onRejected?: (field: string, error: string) => void,
): Scoring {
  const rejected: Array<[string, string]> = [];
  for (const field of ['eval', 'exec_python'] as const) {
    const text: unknown = headerFormulas?.[field];
    if (text === undefined || text === null || (typeof text === 'string' && text.trim() === '')) continue;
    const parsed = typeof text === 'string' ? parseFormula(text) : { ok: false as const, error: `formula is not a string (${typeof text})` };
    if (!parsed.ok) { rejected.push([field, parsed.error]); continue; }
    const bad = sanityError(parsed.fn);
    if (bad !== undefined) { rejected.push([field, bad]); continue; }
    return agreesWithBuiltin(parsed.fn) ? makeScoring('header', builtinScore, 'closed-form') : makeScoring('header', parsed.fn, 'numeric');
  }
  // The reason can quote the header's text (server-supplied): escaped before it is logged.
  for (const [field, error] of rejected) onRejected?.(field, escapeControls(error));
  return makeScoring('builtin', builtinScore, 'closed-form');
}
