import type { RangeSet } from '../net/ipv4.js';
import type { LocalOverride } from './overrides.js';
import type { ProtectedSet } from './protect.js';
import type { Reason } from './types.js';

/**
 * Why an entry that was enforced is not any more, worked out after the write for the few
 * entries that left (the selection's loop over the feed keeps no reason per record). Each
 * path that writes knows a part of the facts: a cycle all of them, a decision poll the
 * decisions, a local apply the overrides; what is not known is not claimed.
 */
export type LeaveReason =
  | 'expired'
  | 'protected'
  | 'local_allow'
  | 'too_wide'
  | 'whitelisted'
  | 'local_block_ended'
  | 'manual_withdrawn'
  | 'below_threshold'
  | 'cut_by_maximum_rules'
  | 'not_in_feed';

export interface LeaveFacts {
  /** Epoch s of the write: an expiry at or before it is why the entry left. */
  readonly now: number;
  readonly protectedSet?: ProtectedSet;
  /** The local allows in force. */
  readonly allows?: readonly LocalOverride[];
  readonly minPrefix?: number;
  readonly whitelist?: RangeSet;
  /** Whether a manual block of this network is still decided (known to a cycle and a decision poll). */
  readonly isManual?: (start: number, prefix: number) => boolean;
  /** The decayed score of the network's feed record, null when the feed has none (known to a cycle only). */
  readonly feedScore?: (start: number, prefix: number) => number | null;
  readonly threshold?: number;
  /** The rank a score would have had, for an entry the cap left out (known to a cycle only). */
  readonly rankOfCut?: (score: number) => number | undefined;
}

export interface Left {
  readonly reason: LeaveReason;
  readonly score: number | null;
  readonly rank: number | null;
}

const NONE = { score: null, rank: null } as const;

/** Why the entry `start/prefix`, enforced before for `reason` until `expiresAt`, is not enforced now. */
export function leaveReason(f: LeaveFacts, start: number, prefix: number, reason: Reason, expiresAt: number | null): Left {
  if (expiresAt !== null && expiresAt <= f.now) return { reason: 'expired', ...NONE };
  const range = { start, end: start + 2 ** (32 - prefix) - 1 };
  if (f.protectedSet?.overlaps(range)) return { reason: 'protected', ...NONE };
  if (f.allows?.some((a) => a.action === 'allow' && a.cidr.start <= range.end && range.start <= a.cidr.end)) return { reason: 'local_allow', ...NONE };
  if (f.minPrefix !== undefined && prefix < f.minPrefix) return { reason: 'too_wide', ...NONE };
  if (f.whitelist?.overlaps(range)) return { reason: 'whitelisted', ...NONE };
  if (reason === 'local') return { reason: 'local_block_ended', ...NONE };
  if (reason === 'manual' && f.isManual && !f.isManual(start, prefix)) return { reason: 'manual_withdrawn', ...NONE };
  // An address of the URL feed is not in the score feed: gone from the URL feed's selection.
  if (f.feedScore && reason === 'url') return { reason: 'not_in_feed', ...NONE };
  if (f.feedScore && reason === 'score') {
    const score = f.feedScore(start, prefix);
    if (score === null) return { reason: 'not_in_feed', ...NONE };
    if (f.threshold !== undefined && !(score >= f.threshold)) return { reason: 'below_threshold', score, rank: null };
    return { reason: 'cut_by_maximum_rules', score, rank: f.rankOfCut?.(score) ?? null };
  }
  // Still decided, not vetoed, nothing else known: the cap is what is left (a local block or a
  // new manual decision took its room).
  return { reason: 'cut_by_maximum_rules', ...NONE };
}
