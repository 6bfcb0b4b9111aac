import type { AgentConfig } from '../../config/load.js';
import { RangeSet } from '../../net/ipv4.js';
import { leaveReason, type LeaveFacts } from '../../policy/leave-reasons.js';
import { activeOverrides, type LocalOverride } from '../../policy/overrides.js';
import type { ProtectedSet } from '../../policy/protect.js';
import { rankOfCut, type CutScores } from '../../policy/selected-columns.js';
import type { Scoring } from '../../score/decay.js';
import type { AppliedChange } from '../state/history/applied-history.js';
import type { Cause } from '../state/history/codes.js';
import { loadOverrides } from '../state/overrides-store.js';
import type { PulledFeeds } from './pull-all.js';

/**
 * What each path that writes the kernel tells the change history about why entries left:
 * the facts it has at hand (see policy/leave-reasons.ts), worked out only for the entries
 * that did leave.
 */

/** The facts of a cycle's pull, asked at its write (while the pulled feed is still held). */
export type CycleFacts = (now: number, allows: readonly LocalOverride[]) => LeaveFacts;

export function cycleFacts(o: { feeds: PulledFeeds; scoring: Scoring; threshold: number; protectedSet: ProtectedSet; minPrefix: number; cut: CutScores | undefined; scoredAt: number }): CycleFacts {
  const { feed, manualBlocks } = o.feeds;
  let whitelist: RangeSet | undefined;
  return (now, allows) => ({
    now,
    allows,
    protectedSet: o.protectedSet,
    minPrefix: o.minPrefix,
    whitelist: (whitelist ??= new RangeSet([...o.feeds.whitelist.values()].map((w) => w.cidr))),
    isManual: (start, prefix) => manualBlocks.find(start, prefix) !== -1,
    feedScore: (start, prefix) => {
      const at = feed.find(start, prefix);
      return at === -1 ? null : o.scoring.score(feed.scoreAt(at), o.scoredAt - feed.tsAt(at));
    },
    threshold: o.threshold,
    ...(o.cut ? { rankOfCut: (score: number) => rankOfCut(o.cut!, score) } : {}),
  });
}

/** The local allows in force at `now` (none when the overrides file is unusable: the write that reads it reports that). */
export function localAllows(config: Pick<AgentConfig, 'state_dir'>, now: number): LocalOverride[] {
  try {
    return activeOverrides(loadOverrides(config.state_dir), now).filter((o) => o.action === 'allow');
  } catch {
    return [];
  }
}

/** A write's change for the history: why entries left, from `facts` (made on the first entry that left). */
export function historyChange(cause: Cause, now: number, facts: () => Omit<LeaveFacts, 'now'>, extra: Partial<AppliedChange> = {}): AppliedChange {
  let made: LeaveFacts | undefined;
  return {
    cause,
    now,
    leave: (start, prefix, reason, expiresAt) => leaveReason((made ??= { ...facts(), now }), start, prefix, reason, expiresAt),
    ...extra,
  };
}
