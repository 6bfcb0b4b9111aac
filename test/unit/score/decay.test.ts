import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { builtinScore, createScoring, type Scoring } from '../../../src/score/decay.js';
import { builtinSecondsUntilBelow, numericSecondsUntilBelow } from '../../../src/score/expiry.js';
import type { ScoreFn } from '../../../src/score/formula.js';

const DAY = 86_400;
const EVAL_TEXT = 'scoreTimeZero / (1 + Math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))';
const PYTHON_TEXT = 'scoreTimeZero / (1 + math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))';
const relErr = (a: number, b: number): number => (a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b)));

function scoringWith(h: { eval?: string; exec_python?: string }): { scoring: Scoring; rejected: Array<[string, string]> } {
  const rejected: Array<[string, string]> = [];
  const scoring = createScoring(h, (field, error) => rejected.push([field, error]));
  return { scoring, rejected };
}

describe('built-in decay via Scoring', () => {
  const { scoring } = scoringWith({});

  it('is the built-in when the header has no formula', () => {
    expect(scoring.source).toBe('builtin');
    expect(scoring.expiry).toBe('closed-form');
  });

  it('matches the contract formula', () => {
    expect(scoring.score(4, 36_000)).toBeCloseTo(2, 12); // half of S at t = 2.5 S hours
    expect(scoring.score(3, 5000)).toBe(3 / (1 + Math.exp((3 / 3) * (5000 / 3600 - 2.5 * 3))));
  });

  it('starts at ≈ S (S / (1 + e^-7.5)) and treats t < 0 as 0', () => {
    for (const S of [0.01, 1, 5, 10, 100]) {
      expect(scoring.score(S, 0)).toBe(S / (1 + Math.exp(-7.5)));
      expect(relErr(scoring.score(S, 0), S)).toBeLessThan(6e-4);
      expect(scoring.score(S, -5000)).toBe(scoring.score(S, 0));
    }
  });

  it('is monotonically non-increasing in t, and strictly decreasing through the transition', () => {
    const t = fc.double({ min: 0, max: 365 * DAY, noNaN: true });
    fc.assert(fc.property(fc.double({ min: 0.01, max: 100, noNaN: true }), t, t, (S, a, b) => {
      const [t1, t2] = a <= b ? [a, b] : [b, a];
      expect(scoring.score(S, t2)).toBeLessThanOrEqual(scoring.score(S, t1));
    }), { numRuns: 5000 });
    for (const S of [0.5, 3, 10]) expect(scoring.score(S, 9000 * S + 60)).toBeLessThan(scoring.score(S, 9000 * S));
  });

  it('scores 0 for S <= 0, non-finite S, and decays to 0 (never negative or NaN)', () => {
    for (const S of [0, -0, -1, -1e9, NaN, Infinity, -Infinity]) expect(scoring.score(S, 100)).toBe(0);
    expect(scoring.score(5, 10 * 365 * DAY)).toBe(0);
    expect(scoring.score(5, Infinity)).toBe(0);
    expect(scoring.score(5, NaN)).toBe(scoring.score(5, 0));
  });

  it('secondsUntilBelow uses the closed form', () => {
    expect(scoring.secondsUntilBelow(4, 0, 2)).toBeCloseTo(36_000, 6);
    expect(scoring.secondsUntilBelow(4, 40_000, 2)).toBe(0);
    expect(scoring.secondsUntilBelow(4, 0, 0)).toBeNull();
    expect(scoring.secondsUntilBelow(-4, 0, 1)).toBe(0);
  });

  it('builtinScore is the raw formula', () => {
    expect(builtinScore(2, 0)).toBe(2 / (1 + Math.exp(-7.5)));
  });
});

describe('createScoring: header formulas', () => {
  it('uses a valid header formula (eval first) and its closed-form expiry when it is the built-in', () => {
    for (const h of [{ eval: EVAL_TEXT, exec_python: PYTHON_TEXT }, { eval: EVAL_TEXT }, { exec_python: PYTHON_TEXT }]) {
      const { scoring, rejected } = scoringWith(h);
      expect(scoring.source).toBe('header');
      expect(scoring.expiry).toBe('closed-form');
      expect(rejected).toEqual([]);
      expect(scoring.score(3, 20_000)).toBe(builtinScore(3, 20_000));
      expect(scoring.secondsUntilBelow(3, 0, 1)).toBe(builtinSecondsUntilBelow(3, 0, 1));
    }
  });

  it('recognises an algebraically rearranged built-in (python `**`) as the built-in', () => {
    const { scoring } = scoringWith({ exec_python: 'scoreTimeZero / (1 + math.e ** (3 * (current_time / 3600 - 2.5 * scoreTimeZero) / scoreTimeZero))' });
    expect(scoring.source).toBe('header');
    expect(scoring.expiry).toBe('closed-form');
  });

  it('rejects code-like header text, reports each field once, and falls back to the built-in', () => {
    const onRejected = vi.fn();
    const scoring = createScoring({ eval: "require('child_process').execSync('id')", exec_python: "__import__('os').system('id')" }, onRejected);
    expect(scoring.source).toBe('builtin');
    expect(scoring.expiry).toBe('closed-form');
    expect(onRejected).toHaveBeenCalledTimes(2);
    expect(onRejected).toHaveBeenNthCalledWith(1, 'eval', expect.stringMatching(/unknown name "require" at position 0/));
    expect(onRejected).toHaveBeenNthCalledWith(2, 'exec_python', expect.stringMatching(/unknown name "__import__" at position 0/));
    expect(scoring.score(3, 20_000)).toBe(builtinScore(3, 20_000));
  });

  it('falls back to exec_python when eval is unusable, without reporting', () => {
    const { scoring, rejected } = scoringWith({ eval: 'process.exit(1)', exec_python: 'scoreTimeZero * math.exp(-current_time / 3600)' });
    expect(scoring.source).toBe('header');
    expect(scoring.expiry).toBe('numeric');
    expect(rejected).toEqual([]);
  });

  it.each([
    ['increasing in t', 'scoreTimeZero * (1 + current_time / 3600)', /increases with time/],
    ['increasing somewhere', 'scoreTimeZero * abs(current_time / 3600 - 24) / 24', /increases with time/],
    ['negative', '-scoreTimeZero', /gives -/],
    ['infinite at t = 0', 'scoreTimeZero / current_time', /gives Infinity/],
    ['NaN', 'log(-scoreTimeZero)', /gives NaN/],
    ['NaN once exp overflows', 'scoreTimeZero * exp(-current_time / 3600) * exp(current_time) / exp(current_time)', /gives NaN/],
  ])('rejects a formula that is %s', (_what, text, reason) => {
    const { scoring, rejected } = scoringWith({ eval: text, exec_python: text });
    expect(scoring.source).toBe('builtin');
    expect(rejected).toEqual([['eval', expect.stringMatching(reason)], ['exec_python', expect.stringMatching(reason)]]);
  });

  it('skips absent or blank fields without reporting them', () => {
    const { scoring, rejected } = scoringWith({ eval: '  ', exec_python: '' });
    expect(scoring.source).toBe('builtin');
    expect(rejected).toEqual([]);
    expect(createScoring({ eval: 42 as unknown as string }, (f, e) => rejected.push([f, e])).source).toBe('builtin');
    expect(rejected).toEqual([['eval', 'formula is not a string (number)']]);
  });

  it('works without an onRejected callback', () => {
    expect(createScoring({ eval: 'this' }).source).toBe('builtin');
  });

  it('uses a different valid decreasing formula with the numeric solver', () => {
    const { scoring, rejected } = scoringWith({ eval: 'scoreTimeZero * exp(-current_time/3600)' });
    expect(rejected).toEqual([]);
    expect(scoring.source).toBe('header');
    expect(scoring.expiry).toBe('numeric');
    expect(scoring.score(8, 3600)).toBeCloseTo(8 / Math.E, 12);
    expect(scoring.score(-8, 3600)).toBe(0);
    const d = scoring.secondsUntilBelow(8, 0, 2)!;
    expect(relErr(d, 3600 * Math.log(4))).toBeLessThan(1e-9);
    expect(relErr(scoring.score(8, d), 2)).toBeLessThan(1e-9);
    expect(scoring.score(8, d)).toBeLessThan(2);
    expect(scoring.secondsUntilBelow(8, 10_000, 2)).toBe(0);
    expect(scoring.secondsUntilBelow(8, 0, 0)).toBeNull();
  });

  it('rejects a formula that does not fall below 1 within 30 days (every score would be permanent) and uses the built-in', () => {
    for (const formula of ['scoreTimeZero', 'scoreTimeZero * exp(-current_time / 3.6e9)', 'scoreTimeZero / (1 + current_time / 3.6e9)']) {
      const { scoring, rejected } = scoringWith({ eval: formula });
      expect(scoring.source, formula).toBe('builtin');
      expect(rejected).toHaveLength(1);
      expect(rejected[0]![1]).toMatch(/does not decay: scoreTimeZero=\S+ still scores \S+ after 30 days/);
    }
    // Falls below 1 on day 29 for the largest score in range: accepted.
    expect(scoringWith({ eval: 'scoreTimeZero * exp(-current_time / 250000)' }).scoring.source).toBe('header');
  });

  it('the numeric solver answers null for a formula that never drops below within its horizon', () => {
    const slow: ScoreFn = (S, t) => S * Math.exp(-t / 3.6e9); // crosses after ~158 years
    expect(numericSecondsUntilBelow(slow, 8, 0, 2)).toBeNull();
    expect(numericSecondsUntilBelow((S) => S, 5, 0, 1)).toBeNull();
    expect(numericSecondsUntilBelow((S) => S, 5, 0, 6)).toBe(0);
  });
});
