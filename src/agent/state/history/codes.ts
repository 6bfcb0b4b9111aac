/**
 * The words of the change history (see journal.ts), each stored as one byte. The codes are
 * part of the file format: a code is never reused for another meaning, new ones are added
 * at the end.
 */

export const CHANGES = ['added', 'removed', 'updated', 'note'] as const;
export type Change = (typeof CHANGES)[number];

/** What made the change: the path that wrote the kernel or the resolver. `expiry`: a kernel timeout ran out (as computed from the expiry the agent gave it). */
export const CAUSES = ['cycle', 'poll', 'override', 'repair', 'restore', 'flush', 'expiry'] as const;
export type Cause = (typeof CAUSES)[number];

/**
 * Why an entry came, changed or left. The first four are why an entry is enforced (as the
 * applied set names them); the others why it is not any more, or what a note says.
 */
export const HISTORY_REASONS = [
  'score',
  'manual',
  'url',
  'local_block',
  'whitelisted',
  'below_threshold',
  'cut_by_maximum_rules',
  'protected',
  'local_allow',
  'too_wide',
  'expired',
  'flushed',
  'running_off',
  'manual_withdrawn',
  'not_in_feed',
  'local_block_ended',
  'backend_changed',
  'cut_by_maximum_domains',
  'restored',
  'repaired',
  'unknown',
] as const;
export type HistoryReason = (typeof HISTORY_REASONS)[number];

export const REASON_CODE = Object.fromEntries(HISTORY_REASONS.map((r, i) => [r, i])) as Record<HistoryReason, number>;
export const CHANGE_CODE = Object.fromEntries(CHANGES.map((c, i) => [c, i])) as Record<Change, number>;
export const CAUSE_CODE = Object.fromEntries(CAUSES.map((c, i) => [c, i])) as Record<Cause, number>;

/** A reason as people read it: `below threshold`, `cut by maximum_rules` (the config key keeps its name). */
export function reasonText(r: HistoryReason): string {
  if (r === 'cut_by_maximum_rules') return 'cut by maximum_rules';
  if (r === 'cut_by_maximum_domains') return 'cut by maximum_domains';
  return r.replace(/_/g, ' ');
}

/** What the applied set calls a reason, as the history names it. */
export function enforcedReason(reason: 'manual' | 'url' | 'score' | 'local'): HistoryReason {
  return reason === 'local' ? 'local_block' : reason;
}

/** What an entry of a given kind is: an address or network, or a name at the resolver. */
export const KINDS = ['addresses', 'names', 'note'] as const;
export type Kind = (typeof KINDS)[number];
