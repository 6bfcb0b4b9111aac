import { RangeSet, compareCidr, fromNumber, type Cidr } from '../net/ipv4.js';
import { IndicatorMap, type Indicator } from '../feed/indicator.js';
import type { Scoring } from '../score/decay.js';
import type { ProtectedSet } from './protect.js';

/** Why an entry is blocked: a manual decision (filter 2), its score, or a local `wcf-agent block`. */
export type Reason = 'manual' | 'score' | 'local';
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
  /** Never selected (rule 1): the built-in ranges, the allowlist, the host's, the API's, ... (see protect.ts). */
  readonly protectedSet: ProtectedSet;
  readonly minPrefix: number;
  readonly threshold: number;
  readonly maximumRules: number;
  readonly scoring: Scoring;
}

export interface Selection {
  readonly entries: SelectedEntry[];
  readonly skipped: Record<SkipReason, number>;
}

function byIpAscending(a: { cidr: Cidr }, b: { cidr: Cidr }): number {
  return compareCidr(a.cidr, b.cidr);
}

/**
 * The feed as a table with one record per address: an IndicatorMap as it is
 * (already de-duplicated), any other iterable with a Map's semantics (the
 * last record of an address wins).
 */
function feedTable(feed: Iterable<Indicator>): IndicatorMap {
  if (feed instanceof IndicatorMap) return feed;
  const t = new IndicatorMap();
  for (const ind of feed) t.setParts(ind.cidr.start, ind.cidr.prefix, ind.ts, ind.score);
  return t;
}

/**
 * The blocked set at `now`, in this order of precedence:
 *  1. never anything overlapping a protected network, nor networks wider than min_prefix;
 *  2. never whitelisted indicators (overlap counts: a whitelisted address inside a blocked /24 vetoes the /24);
 *  3. manual blocks first;
 *  4. then score-based entries with decayed score >= threshold, highest first, ties by ip ascending;
 *  5. all capped at maximum_rules.
 * Pure and deterministic: the same input gives the same output, in the same order.
 *
 * The feed (up to millions of records) is walked by position in its columns:
 * no object per record, and Cidr objects only for what is selected.
 */
export function selectEntries(input: SelectionInput): Selection {
  const skipped: Record<SkipReason, number> = { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 };
  const protectedSet = input.protectedSet.ranges;
  const whitelistSet = new RangeSet([...input.whitelist].map((w) => w.cidr));

  const vetoed = (c: { start: number; end: number; prefix: number }): SkipReason | null => {
    if (c.prefix < input.minPrefix) return 'too_wide';
    if (protectedSet.overlaps(c)) return 'allowlist';
    if (whitelistSet.overlaps(c)) return 'whitelist';
    return null;
  };

  const feed = feedTable(input.feed);
  const decayedAt = (i: number) => input.scoring.score(feed.scoreAt(i), input.now - feed.tsAt(i));

  const manual: SelectedEntry[] = [];
  const manualKeys = new Set<string>();
  /** Feed positions of the manual blocks (kept or vetoed): they are not scored or counted again. */
  const isManual = new Uint8Array(feed.size);
  for (const m of input.manualBlocks) {
    if (manualKeys.has(m.cidr.text)) continue;
    manualKeys.add(m.cidr.text);
    // The address's feed record (if any) is decided here too, so a vetoed address counts once.
    const at = feed.find(m.cidr.start, m.cidr.prefix);
    if (at !== -1) isManual[at] = 1;
    const why = vetoed(m.cidr);
    if (why) {
      skipped[why]++;
      continue;
    }
    manual.push({ cidr: m.cidr, reason: 'manual', score: at !== -1 ? decayedAt(at) : null, expiresAt: null });
  }
  manual.sort(byIpAscending);

  // The hot loop reads the columns directly and inlines `vetoed` (same checks, same order).
  const { starts, prefixes, tss, scores } = feed.columns();
  const { now, threshold, minPrefix, scoring } = input;
  const scored: number[] = [];
  const scoreOf = new Float64Array(feed.size);
  const range = { start: 0, end: 0 };
  for (let i = 0; i < feed.size; i++) {
    if (isManual[i] === 1) continue;
    const prefix = prefixes[i]!;
    if (prefix < minPrefix) {
      skipped.too_wide++;
      continue;
    }
    range.start = starts[i]!;
    range.end = range.start + 2 ** (32 - prefix) - 1;
    if (protectedSet.overlaps(range)) {
      skipped.allowlist++;
      continue;
    }
    if (whitelistSet.overlaps(range)) {
      skipped.whitelist++;
      continue;
    }
    const s = scoring.score(scores[i]!, now - tss[i]!);
    if (!(s >= threshold) || s <= 0) {
      skipped.threshold++;
      continue;
    }
    scoreOf[i] = s;
    scored.push(i);
  }
  scored.sort((x, y) => scoreOf[y]! - scoreOf[x]! || starts[x]! - starts[y]! || prefixes[x]! - prefixes[y]!);

  const cap = input.maximumRules;
  const entries: SelectedEntry[] = manual.slice(0, cap);
  skipped.cap += Math.max(0, manual.length - cap);
  const room = Math.max(0, cap - entries.length);
  skipped.cap += Math.max(0, scored.length - room);
  for (let k = 0; k < scored.length && k < room; k++) {
    const i = scored[k]!;
    // Expiry is solved only for what is selected: at most maximum_rules solves.
    // A ts ahead of our clock (clock skew) holds the full score until that ts, then decays: the
    // expiry is the same instant whenever it is computed, so the next cycle sees no change.
    const age = now - tss[i]!;
    const secs = scoring.secondsUntilBelow(scores[i]!, Math.max(0, age), threshold);
    entries.push({ cidr: fromNumber(starts[i]!, prefixes[i]!), reason: 'score', score: scoreOf[i]!, expiresAt: secs === null ? null : now + secs + Math.max(0, -age) });
  }
  return { entries, skipped };
}
