import { RangeSet } from '../net/ipv4.js';
import type { Indicator } from '../feed/indicator.js';
import type { ProtectedSet } from './protect.js';
import { selectEntries } from './select.js';
import { capRules, type SelectedEntry } from './types.js';
import type { Scoring } from '../score/decay.js';

export interface RebaseInput {
  /** The last selection (manual first, then score, as selectEntries ordered it), without local overrides. */
  readonly base: readonly SelectedEntry[];
  readonly manualBlocks: Iterable<Indicator>;
  readonly whitelist: Iterable<Indicator>;
  readonly protectedSet: ProtectedSet;
  readonly minPrefix: number;
  readonly maximumRules: number;
  /** Epoch s. */
  readonly now: number;
}

/** A scoring that is never asked: the rebase selects manual blocks only (no feed). */
const NO_SCORING: Scoring = {
  source: 'builtin',
  expiry: 'closed-form',
  score: () => 0,
  secondsUntilBelow: () => null,
};

/**
 * The last selection with new manual decisions, without the score feed: the
 * manual blocks are selected afresh by the same rules (protected set,
 * min_prefix, whitelist; first in the cap), and the score entries of the last
 * selection are kept in their order unless the new whitelist covers them or the
 * cap no longer leaves them room. A withdrawn manual block leaves at once; if the
 * feed would still block it by score, the next full cycle brings it back.
 */
export function rebaseOnDecisions(input: RebaseInput): SelectedEntry[] {
  const whitelist = [...input.whitelist];
  const manual = selectEntries({
    now: input.now,
    feed: [],
    manualBlocks: input.manualBlocks,
    whitelist,
    protectedSet: input.protectedSet,
    minPrefix: input.minPrefix,
    threshold: 1,
    maximumRules: input.maximumRules,
    scoring: NO_SCORING,
  }).entries;
  const taken = new Set(manual.map((e) => e.cidr.text));
  const white = new RangeSet(whitelist.map((w) => w.cidr));
  const scored = input.base.filter((e) => e.reason === 'score' && !taken.has(e.cidr.text) && !white.overlaps(e.cidr) && (e.expiresAt === null || e.expiresAt > input.now));
  return [...manual, ...scored].slice(0, capRules(input.maximumRules));
}

/** Whether two decision feeds hold the same networks (order and timestamps aside). */
export function sameDecisions(a: Iterable<Indicator>, b: Iterable<Indicator>): boolean {
  const keys = (x: Iterable<Indicator>) => [...new Set([...x].map((i) => i.cidr.text))].sort().join(',');
  return keys(a) === keys(b);
}
