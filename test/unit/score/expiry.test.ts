import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { builtinScore } from '../../../src/score/decay.js';
import { builtinSecondsUntilBelow, DEFAULT_HORIZON_S, numericSecondsUntilBelow } from '../../../src/score/expiry.js';
import type { ScoreFn } from '../../../src/score/formula.js';

const DAY = 86_400;
const relErr = (a: number, b: number): number => (a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b)));

// Inputs where the crossing is well inside the horizon: S in [0.01, 100], threshold a fraction of S.
const S = fc.double({ min: 0.01, max: 100, noNaN: true });
const frac = fc.double({ min: 1e-6, max: 0.99, noNaN: true });
const elapsed = fc.oneof(fc.constant(0), fc.double({ min: 0, max: 30 * DAY, noNaN: true }));

describe('builtinSecondsUntilBelow (closed form)', () => {
  it('lands on the threshold to 1e-9 relative', () => {
    fc.assert(fc.property(S, frac, (s, f) => {
      const T = f * s;
      const d = builtinSecondsUntilBelow(s, 0, T);
      expect(d).not.toBeNull();
      if (d! > 0) expect(relErr(builtinScore(s, d!), T)).toBeLessThanOrEqual(1e-9);
    }), { numRuns: 5000 });
  });

  it('is relative to t: t + secondsUntilBelow(t) is the same instant for every t before it', () => {
    fc.assert(fc.property(S, frac, fc.double({ min: 0, max: 1, noNaN: true }), (s, f, g) => {
      const T = f * s;
      const tau = builtinSecondsUntilBelow(s, 0, T)!;
      const t = g * tau;
      const d = builtinSecondsUntilBelow(s, t, T)!;
      expect(Math.abs(t + d - tau)).toBeLessThanOrEqual(1e-9 * tau + 1e-9);
    }), { numRuns: 2000 });
  });

  it('handles the edge cases', () => {
    expect(builtinSecondsUntilBelow(5, 0, 0)).toBeNull(); // never below 0
    expect(builtinSecondsUntilBelow(5, 0, -1)).toBeNull();
    expect(builtinSecondsUntilBelow(5, 0, NaN)).toBeNull();
    expect(builtinSecondsUntilBelow(0, 0, 1)).toBe(0); // S <= 0 scores 0
    expect(builtinSecondsUntilBelow(-3, 0, 1)).toBe(0);
    expect(builtinSecondsUntilBelow(NaN, 0, 1)).toBe(0);
    expect(builtinSecondsUntilBelow(Infinity, 0, 1)).toBe(0);
    expect(builtinSecondsUntilBelow(5, 0, 5)).toBe(0); // T >= score(0) = S / (1 + e^-7.5)
    expect(builtinSecondsUntilBelow(5, 0, 6)).toBe(0);
    expect(builtinSecondsUntilBelow(5, 0, builtinScore(5, 0) * (1 + 1e-12))).toBe(0);
    expect(builtinSecondsUntilBelow(5, 365 * DAY, 1)).toBe(0); // long gone
    expect(builtinSecondsUntilBelow(5, Infinity, 1)).toBe(0);
    expect(builtinSecondsUntilBelow(5, -100, 2.5)).toBe(builtinSecondsUntilBelow(5, 0, 2.5)); // t < 0 as 0
    // score(τ) = S/2 at τ = 3600 * 2.5 * S
    expect(builtinSecondsUntilBelow(4, 0, 2)).toBeCloseTo(36_000, 6);
    expect(builtinSecondsUntilBelow(4, 1000, 2)).toBeCloseTo(35_000, 6);
    // beyond the horizon: null; an explicit horizon is honoured
    expect(builtinSecondsUntilBelow(50_000, 0, 1)).toBeNull();
    expect(builtinSecondsUntilBelow(4, 0, 2, 35_999)).toBeNull();
    expect(builtinSecondsUntilBelow(4, 0, 2, 36_001)).toBeCloseTo(36_000, 6);
  });
});

describe('numericSecondsUntilBelow', () => {
  it('agrees with the closed form on the built-in formula', () => {
    fc.assert(fc.property(S, frac, elapsed, (s, f, t) => {
      const T = f * s;
      const closed = builtinSecondsUntilBelow(s, t, T);
      const numeric = numericSecondsUntilBelow(builtinScore, s, t, T);
      expect(closed).not.toBeNull();
      expect(numeric).not.toBeNull();
      // within the solver's tolerance (1e-6 s, tighter for short decays) or 1e-9 of elapsed time
      expect(Math.abs(numeric! - closed!)).toBeLessThanOrEqual(Math.max(2e-6, 1e-9 * (t + closed!)));
      if (numeric! > 0) {
        expect(builtinScore(s, t + numeric!)).toBeLessThan(T); // the first instant *below*
        expect(relErr(builtinScore(s, t + numeric!), T)).toBeLessThanOrEqual(1e-9);
      } else {
        expect(closed!).toBeLessThan(2e-6);
      }
    }), { numRuns: 5000 });
  });

  it('solves other monotone formulas', () => {
    const expDecay: ScoreFn = (s, t) => s * Math.exp(-t / 3600);
    expect(numericSecondsUntilBelow(expDecay, 8, 0, 2)).toBeCloseTo(3600 * Math.log(4), 6);
    expect(numericSecondsUntilBelow(expDecay, 8, 1000, 2)).toBeCloseTo(3600 * Math.log(4) - 1000, 6);
    const step: ScoreFn = (s, t) => (t < 5000 ? s : 0); // discontinuous: first instant below is 5000
    expect(numericSecondsUntilBelow(step, 3, 0, 1)).toBeCloseTo(5000, 6);
    const constant: ScoreFn = (s) => s;
    expect(numericSecondsUntilBelow(constant, 3, 0, 1)).toBeNull();
    expect(numericSecondsUntilBelow(constant, 3, 0, 3)).toBeNull(); // >= threshold stays above
    expect(numericSecondsUntilBelow(constant, 3, 0, 4)).toBe(0);
    const garbage: ScoreFn = () => NaN; // non-finite reads as 0
    expect(numericSecondsUntilBelow(garbage, 3, 0, 1)).toBe(0);
  });

  it('handles the edge cases like the closed form', () => {
    for (const [s, t, T] of [[5, 0, 0], [5, 0, -1], [0, 0, 1], [-1, 0, 1], [NaN, 0, 1], [5, 0, 6], [5, 365 * DAY, 1], [50_000, 0, 1], [5000, 0, 1], [5, -100, 2.5]] as const) {
      const closed = builtinSecondsUntilBelow(s, t, T);
      const numeric = numericSecondsUntilBelow(builtinScore, s, t, T);
      if (closed === null) expect(numeric).toBeNull();
      else expect(numeric).toBeCloseTo(closed, 5);
    }
    expect(numericSecondsUntilBelow(builtinScore, 4, 0, 2, 35_999)).toBeNull();
    expect(numericSecondsUntilBelow(builtinScore, 4, 0, 2, 0)).toBeNull();
    expect(DEFAULT_HORIZON_S).toBe(10 * 365 * DAY);
  });
});
