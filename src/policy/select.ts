import { RangeSet, compareCidr, parseCidr, type Cidr } from '../net/ipv4.js';
import type { Indicator } from '../feed/indicator.js';
import type { Scoring } from '../score/decay.js';

export type Reason = 'manual' | 'score';
export type SkipReason = 'allowlist' | 'too_wide' | 'whitelist' | 'threshold' | 'cap';

export interface SelectedEntry {
  readonly cidr: Cidr;
  readonly reason: Reason;
  /** Decayed score now; null for a manual block with no feed record. */
  readonly score: number | null;
  /** Epoch s when the decayed score falls below the threshold; null = no expiry (manual, or never within the horizon). */
  readonly expiresAt: number | null;
}

export interface SelectionInput {
  /** Epoch seconds. */
  readonly now: number;
  /** Score-based indicators (filter 0), de-duplicated. */
  readonly feed: Iterable<Indicator>;
  /** Manual blocks (filter 2). */
  readonly manualBlocks: Iterable<Indicator>;
  /** Whitelisted indicators (filter 3). */
  readonly whitelist: Iterable<Indicator>;
  /** Local allowlist plus the host's and the API server's addresses. */
  readonly protectedNets: readonly Cidr[];
  readonly minPrefix: number;
  readonly threshold: number;
  readonly maximumRules: number;
  readonly scoring: Scoring;
}

export interface Selection {
  readonly entries: SelectedEntry[];
  readonly skipped: Record<SkipReason, number>;
}

/** Never blocked, whatever the feed says (contract section 2, rule 1). */
export const ALWAYS_PROTECTED: readonly Cidr[] = ['127.0.0.0/8', '0.0.0.0/8'].map((s) => {
  const r = parseCidr(s);
  if (!r.ok) throw new Error(r.error);
  return r.cidr;
});

function byIpAscending(a: { cidr: Cidr }, b: { cidr: Cidr }): number {
  return compareCidr(a.cidr, b.cidr);
}

/**
 * The blocked set at `now`, in the contract's order of precedence:
 *  1. never anything overlapping a protected network, nor networks wider than min_prefix;
 *  2. never whitelisted indicators (overlap counts: a whitelisted address inside a blocked /24 vetoes the /24);
 *  3. manual blocks first;
 *  4. then score-based entries with decayed score >= threshold, highest first, ties by ip ascending;
 *  5. all capped at maximum_rules.
 * Pure and deterministic: the same input gives the same output, in the same order.
 */
export function selectEntries(input: SelectionInput): Selection {
  const skipped: Record<SkipReason, number> = { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 };
  const protectedSet = new RangeSet([...ALWAYS_PROTECTED, ...input.protectedNets]);
  const whitelistSet = new RangeSet([...input.whitelist].map((w) => w.cidr));

  const vetoed = (c: Cidr): SkipReason | null => {
    if (c.prefix < input.minPrefix) return 'too_wide';
    if (protectedSet.overlaps(c)) return 'allowlist';
    if (whitelistSet.overlaps(c)) return 'whitelist';
    return null;
  };

  const feedScore = new Map<string, Indicator>();
  for (const ind of input.feed) feedScore.set(ind.cidr.text, ind);
  const decayed = (ind: Indicator) => input.scoring.score(ind.score, input.now - ind.ts);

  const manual: SelectedEntry[] = [];
  const manualKeys = new Set<string>();
  for (const m of input.manualBlocks) {
    if (manualKeys.has(m.cidr.text)) continue;
    const why = vetoed(m.cidr);
    if (why) {
      skipped[why]++;
      continue;
    }
    manualKeys.add(m.cidr.text);
    const rec = feedScore.get(m.cidr.text);
    manual.push({ cidr: m.cidr, reason: 'manual', score: rec ? decayed(rec) : null, expiresAt: null });
  }
  manual.sort(byIpAscending);

  const scored: { ind: Indicator; score: number }[] = [];
  for (const ind of feedScore.values()) {
    if (manualKeys.has(ind.cidr.text)) continue;
    const why = vetoed(ind.cidr);
    if (why) {
      skipped[why]++;
      continue;
    }
    const s = decayed(ind);
    if (!(s >= input.threshold) || s <= 0) {
      skipped.threshold++;
      continue;
    }
    scored.push({ ind, score: s });
  }
  scored.sort((a, b) => b.score - a.score || compareCidr(a.ind.cidr, b.ind.cidr));

  const cap = input.maximumRules;
  const entries: SelectedEntry[] = manual.slice(0, cap);
  skipped.cap += Math.max(0, manual.length - cap);
  const room = Math.max(0, cap - entries.length);
  skipped.cap += Math.max(0, scored.length - room);
  for (let i = 0; i < scored.length && i < room; i++) {
    const { ind, score } = scored[i]!;
    // Expiry is solved only for what is selected: at most maximum_rules solves.
    const secs = input.scoring.secondsUntilBelow(ind.score, Math.max(0, input.now - ind.ts), input.threshold);
    entries.push({ cidr: ind.cidr, reason: 'score', score, expiresAt: secs === null ? null : input.now + secs });
  }
  return { entries, skipped };
}
