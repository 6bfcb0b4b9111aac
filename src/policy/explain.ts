import type { Cidr } from '../net/ipv4.js';
import type { Indicator } from '../feed/indicator.js';
import type { ProtectedMember, ProtectedSet } from './protect.js';
import type { Selection } from './selected-columns.js';
import type { ExplainedRecord, SkipReason } from './types.js';

/**
 * Why an address is or is not blocked, read from what the selection decided
 * for the records overlapping it (selectEntries with `explainFor`): nothing
 * here decides anew, it only picks the record that settles the answer.
 */

/** Blocked: `manual`, `score`. Not blocked: the rest. */
export type Verdict = 'manual' | 'score' | 'allowlist' | 'protected' | 'whitelist' | 'too_wide' | 'below_threshold' | 'over_cap' | 'not_in_feed';

/** A record's own outcome in the verdict's words (`selected` when it is in the blocked set). */
export type RecordOutcome = 'selected' | 'as_manual_block' | Exclude<Verdict, 'manual' | 'score' | 'not_in_feed'>;

export interface RecordExplained extends ExplainedRecord {
  /** The record holds the whole queried address or network (else it lies inside the queried network). */
  readonly covers: boolean;
  readonly result: RecordOutcome;
  /** For `allowlist` / `protected`: the member the record overlaps. */
  readonly protectedBy?: ProtectedMember;
  /** For `whitelist`: the whitelisted indicator the record overlaps. */
  readonly whitelistedBy?: Cidr;
}

export interface Explanation {
  readonly query: Cidr;
  readonly blocked: boolean;
  readonly verdict: Verdict;
  /** The record the verdict rests on (undefined for `not_in_feed`). */
  readonly decidedBy?: RecordExplained;
  /** A protected member overlapping the queried address itself, if any: it would never be blocked. */
  readonly protectedBy?: ProtectedMember;
  /** Feed records (filter 0) overlapping the query, most specific first. */
  readonly records: readonly RecordExplained[];
  /** Manual blocks (filter 2) overlapping the query. */
  readonly manualBlocks: readonly RecordExplained[];
  /** Whitelisted indicators (filter 3) overlapping the query. */
  readonly whitelist: readonly Indicator[];
}

export interface ExplainInput {
  readonly query: Cidr;
  /** The selection run with `explainFor: query`. */
  readonly selection: Selection;
  readonly protectedSet: ProtectedSet;
  readonly whitelist: Iterable<Indicator>;
}

const overlap = (a: { start: number; end: number }, b: { start: number; end: number }) => a.start <= b.end && b.start <= a.end;

/**
 * How far a record went through the selection's checks (in their order: width,
 * protected set, whitelist, threshold, cap): when nothing covering an address
 * is selected, the record that went furthest says why.
 */
const STAGE: Record<SkipReason, number> = { too_wide: 1, allowlist: 2, whitelist: 3, threshold: 4, cap: 5 };

function describe(r: ExplainedRecord, query: Cidr, protectedSet: ProtectedSet, whitelist: readonly Indicator[]): RecordExplained {
  const covers = r.cidr.start <= query.start && query.end <= r.cidr.end;
  const base = { ...r, covers };
  switch (r.outcome) {
    case 'selected':
      return { ...base, result: 'selected' };
    case 'manual':
      return { ...base, result: 'as_manual_block' };
    case 'too_wide':
      return { ...base, result: 'too_wide' };
    case 'threshold':
      return { ...base, result: 'below_threshold' };
    case 'cap':
      return { ...base, result: 'over_cap' };
    case 'whitelist': {
      const w = whitelist.find((x) => overlap(x.cidr, r.cidr));
      return { ...base, result: 'whitelist', ...(w ? { whitelistedBy: w.cidr } : {}) };
    }
    case 'allowlist': {
      const member = protectedSet.memberFor(r.cidr);
      return { ...base, result: member?.source === 'allowlist' ? 'allowlist' : 'protected', ...(member ? { protectedBy: member } : {}) };
    }
  }
}

/** Of the records that hold the whole query, the one that settles the verdict. */
function decide(covering: readonly RecordExplained[]): { verdict: Verdict; record?: RecordExplained } {
  const selected = covering.filter((r) => r.outcome === 'selected');
  const manual = selected.find((r) => r.kind === 'manual');
  if (manual) return { verdict: 'manual', record: manual };
  if (selected.length > 0) {
    // The longest-lived entry keeps the address blocked longest (null = no expiry).
    const longest = selected.reduce((a, b) => (a.belowAt === null ? a : b.belowAt === null || b.belowAt > a.belowAt ? b : a));
    return { verdict: 'score', record: longest };
  }
  let best: RecordExplained | undefined;
  for (const r of covering) if (r.outcome !== 'manual' && (!best || furtherThan(r, best))) best = r;
  if (!best || best.result === 'selected' || best.result === 'as_manual_block') return { verdict: 'not_in_feed' };
  return { verdict: best.result, record: best };
}

/** `a` went further than `b`; at the same stage, a manual block beats a feed record, then the more specific wins. */
function furtherThan(a: RecordExplained, b: RecordExplained): boolean {
  const sa = a.outcome === 'selected' || a.outcome === 'manual' ? 0 : STAGE[a.outcome];
  const sb = b.outcome === 'selected' || b.outcome === 'manual' ? 0 : STAGE[b.outcome];
  if (sa !== sb) return sa > sb;
  if (a.kind !== b.kind) return a.kind === 'manual';
  return a.cidr.prefix > b.cidr.prefix;
}

const bySpecificity = (a: RecordExplained, b: RecordExplained) => b.cidr.prefix - a.cidr.prefix || a.cidr.start - b.cidr.start;

/** The verdict for `query`, the rule that decided it, and every record and decision that bears on it. Pure. */
export function explainAddress(input: ExplainInput): Explanation {
  const { query, selection, protectedSet } = input;
  if (!selection.explained) throw new Error('explainAddress needs a selection run with explainFor');
  const whitelist = [...input.whitelist];
  const all = selection.explained.map((r) => describe(r, query, protectedSet, whitelist));
  const covering = all.filter((r) => r.covers);
  const { verdict, record } = decide(covering);
  const protectedBy = protectedSet.memberFor(query);
  return {
    query,
    blocked: verdict === 'manual' || verdict === 'score',
    verdict,
    ...(record ? { decidedBy: record } : {}),
    ...(protectedBy ? { protectedBy } : {}),
    records: all.filter((r) => r.kind === 'feed').sort(bySpecificity),
    manualBlocks: all.filter((r) => r.kind === 'manual').sort(bySpecificity),
    whitelist: whitelist.filter((w) => overlap(w.cidr, query)),
  };
}
