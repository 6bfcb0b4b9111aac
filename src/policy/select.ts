import { RangeSet, compareCidr, fromNumber, parseCidr, type Cidr } from '../net/ipv4.js';
import { IndicatorMap, type Indicator } from '../feed/indicator.js';
import type { Scoring } from '../score/decay.js';
import type { ProtectedSet } from './protect.js';
import { SelectedColumns, selectionOf, type Selection } from './selected-columns.js';
import { capRules, type ExplainedRecord, type SelectedEntry, type SkipReason } from './types.js';
import { releaseArray } from '../util/release.js';

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
  /** IPv4-literal URL hosts (already past the URL rules), placed after the manual blocks. */
  readonly urlAddresses?: readonly { ip: string; score: number; expiresAt: number | null }[];
  /**
   * `explain`: also say what was decided for every record overlapping this
   * range (Selection.explained). Worked out after the selection, from its
   * own checks and order, for those few records only: the loop over the feed
   * is the same with or without it.
   */
  readonly explainFor?: { readonly start: number; readonly end: number };
}



/**
 * When a score entry's decayed score falls below the threshold (epoch s), or
 * null when not within the horizon. A ts ahead of our clock (clock skew)
 * holds the full score until that ts, then decays: the expiry is the same
 * instant whenever it is computed, so the next cycle sees no change.
 */
export function expiryOf(scoring: Scoring, score: number, ts: number, now: number, threshold: number): number | null {
  const age = now - ts;
  const secs = scoring.secondsUntilBelow(score, Math.max(0, age), threshold);
  return secs === null ? null : now + secs + Math.max(0, -age);
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
  /** Vetoed manual blocks and why (manual decisions number in the hundreds). */
  const manualSkips = new Map<string, SkipReason>();
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
      manualSkips.set(m.cidr.text, why);
      continue;
    }
    manual.push({ cidr: m.cidr, reason: 'manual', score: at !== -1 ? decayedAt(at) : null, expiresAt: null });
  }
  manual.sort(byIpAscending);
  // URL hosts pass the same guards; an address already chosen as a manual block, or its feed record, counts once.
  for (const u of input.urlAddresses ?? []) {
    const r = parseCidr(u.ip);
    if (!r.ok || manualKeys.has(r.cidr.text)) continue;
    manualKeys.add(r.cidr.text);
    const at = feed.find(r.cidr.start, r.cidr.prefix);
    if (at !== -1) isManual[at] = 1;
    const why = vetoed(r.cidr);
    if (why) skipped[why]++;
    else manual.push({ cidr: r.cidr, reason: 'url', score: u.score, expiresAt: u.expiresAt });
  }

  // The hot loop reads the columns directly and inlines `vetoed` (same checks, same order: explainRecords
  // reads a skip back through `vetoed`, so the two must stay alike; a property test holds them to it).
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

  const cap = capRules(input.maximumRules);
  const kept = Math.min(manual.length, cap);
  skipped.cap += manual.length - kept;
  const room = Math.max(0, cap - kept);
  const fromScore = Math.min(scored.length, room);
  skipped.cap += scored.length - fromScore;
  // Sized exactly, filled once: no object per selected entry (see SelectedColumns).
  const columns = new SelectedColumns(kept + fromScore);
  for (let k = 0; k < kept; k++) {
    const m = manual[k]!;
    columns.push(m.cidr.start, m.cidr.prefix, m.reason, m.score, m.expiresAt);
  }
  for (let k = 0; k < fromScore; k++) {
    const i = scored[k]!;
    // Expiry is solved only for what is selected: at most maximum_rules solves.
    columns.push(starts[i]!, prefixes[i]!, 'score', scoreOf[i]!, expiryOf(scoring, scores[i]!, tss[i]!, now, threshold));
  }
  const explained = input.explainFor ? explainRecords(input, feed, input.explainFor, { manual, manualSkips, isManual, scoreOf, scored, vetoed }) : undefined;
  // What the cap left out, best first: the rank an entry that left for the cap would have had.
  const cutScores = new Float32Array(scored.length - fromScore);
  for (let k = fromScore; k < scored.length; k++) cutScores[k - fromScore] = scoreOf[scored[k]!]!;
  // Working arrays of the feed's size, freed now rather than at the next collection.
  releaseArray(scoreOf);
  releaseArray(isManual);
  return selectionOf(columns, skipped, explained, { firstRank: kept + fromScore + 1, scores: cutScores });
}

/** What selectEntries decided, as explainRecords reads it back. */
interface Decided {
  /** Manual blocks kept, sorted (their selection order). */
  readonly manual: readonly SelectedEntry[];
  /** Manual blocks vetoed, with why. */
  readonly manualSkips: ReadonlyMap<string, SkipReason>;
  readonly isManual: Uint8Array;
  /** Decayed score of each feed position that passed every check (0 for the others). */
  readonly scoreOf: Float64Array;
  /** Those positions, in selection order. */
  readonly scored: readonly number[];
  readonly vetoed: (c: { start: number; end: number; prefix: number }) => SkipReason | null;
}

/**
 * The decisions of selectEntries for the records overlapping `range`, read
 * back from its working arrays: a record that passed every check has its
 * decayed score in `scoreOf` and its place in `scored`; any other was stopped
 * by `vetoed` (the feed loop's checks, in its order) or by the threshold.
 * A pass over the feed's address column and one over `scored`, only when asked.
 */
function explainRecords(input: SelectionInput, feed: IndicatorMap, range: { start: number; end: number }, d: Decided): ExplainedRecord[] {
  const { now, threshold, scoring, maximumRules } = input;
  const hits = (c: { start: number; end: number }) => c.start <= range.end && range.start <= c.end;
  const out: ExplainedRecord[] = [];
  const belowAt = (score: number, ts: number, decayed: number): number | null => {
    if (decayed >= threshold) return expiryOf(scoring, score, ts, now, threshold);
    // Already below: when it crossed (from its ts).
    const secs = scoring.secondsUntilBelow(score, 0, threshold);
    return secs === null ? null : ts + secs;
  };
  const feedScore = (c: Cidr): number | null => {
    const at = feed.find(c.start, c.prefix);
    return at === -1 ? null : scoring.score(feed.scoreAt(at), now - feed.tsAt(at));
  };

  const manualRank = new Map(d.manual.map((e, k) => [e.cidr.text, k + 1]));
  const seen = new Set<string>();
  for (const m of input.manualBlocks) {
    if (!hits(m.cidr) || seen.has(m.cidr.text)) continue;
    seen.add(m.cidr.text);
    const rank = manualRank.get(m.cidr.text);
    const outcome = d.manualSkips.get(m.cidr.text) ?? (rank !== undefined && rank <= maximumRules ? 'selected' : 'cap');
    out.push({ cidr: m.cidr, kind: 'manual', ts: m.ts, storedScore: m.score, score: feedScore(m.cidr), belowAt: null, outcome, ...(rank !== undefined ? { rank } : {}) });
  }

  const { starts, prefixes, tss, scores } = feed.columns();
  const positions: number[] = [];
  for (let i = 0; i < feed.size; i++) {
    const start = starts[i]!;
    if (start <= range.end && range.start <= start + 2 ** (32 - prefixes[i]!) - 1) positions.push(i);
  }
  const rankOf = new Map<number, number>();
  if (positions.length > 0) {
    const wanted = new Set(positions.filter((i) => d.scoreOf[i]! > 0));
    for (let k = 0; k < d.scored.length && rankOf.size < wanted.size; k++) if (wanted.has(d.scored[k]!)) rankOf.set(d.scored[k]!, d.manual.length + k + 1);
  }
  for (const i of positions) {
    const cidr = fromNumber(starts[i]!, prefixes[i]!);
    const decayed = scoring.score(scores[i]!, now - tss[i]!);
    const rank = rankOf.get(i);
    const outcome: ExplainedRecord['outcome'] =
      d.isManual[i] === 1 ? 'manual' : rank !== undefined ? (rank <= maximumRules ? 'selected' : 'cap') : (d.vetoed(cidr) ?? 'threshold');
    out.push({ cidr, kind: 'feed', ts: tss[i]!, storedScore: scores[i]!, score: decayed, belowAt: belowAt(scores[i]!, tss[i]!, decayed), outcome, ...(rank !== undefined ? { rank } : {}) });
  }
  return out;
}
