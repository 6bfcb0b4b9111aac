import type { Cidr } from '../net/ipv4.js';

/**
 * Why an entry is blocked: a manual decision (filter 2), the IPv4-literal host of a URL from the URL
 * feed (src/policy/domains.ts), its score, or a local `wcf-agent block`.
 */
export type Reason = 'manual' | 'url' | 'score' | 'local';
export type SkipReason = 'allowlist' | 'too_wide' | 'whitelist' | 'threshold' | 'cap';

export interface SelectedEntry {
  readonly cidr: Cidr;
  readonly reason: Reason;
  /** Decayed score now; null for a manual block with no feed record. */
  readonly score: number | null;
  /** Epoch s when the decayed score falls below the threshold; null = no expiry (manual, or never within the horizon). */
  readonly expiresAt: number | null;
}

/** Reasons as the one-byte codes the selection's and the applied set's columns store. */
export const REASONS: readonly Reason[] = ['score', 'manual', 'url', 'local'];
export const REASON_CODE: Readonly<Record<Reason, number>> = { score: 0, manual: 1, url: 2, local: 3 };

/** The most entries a selection may hold: `maximum_rules`, never below zero (a negative value blocks nothing). */
export function capRules(maximumRules: number): number {
  return Math.max(0, maximumRules);
}

/** What the selection decided for one record overlapping `explainFor`. */
export interface ExplainedRecord {
  readonly cidr: Cidr;
  /** `feed`: a score record (filter 0); `manual`: a manual block (filter 2). */
  readonly kind: 'feed' | 'manual';
  /** Stamp and stored score of the record (a manual block's own). */
  readonly ts: number;
  readonly storedScore: number;
  /** Decayed score now (of the feed record: for a manual block, of its address's feed record; null without one). */
  readonly score: number | null;
  /**
   * Epoch s when the decayed score falls (or fell) below the threshold; null =
   * not within the horizon, or a manual block with no feed record.
   */
  readonly belowAt: number | null;
  /**
   * `selected`, or why not. `manual`: a feed record whose address is also
   * manually blocked, decided as that block (see the manual record).
   */
  readonly outcome: 'selected' | SkipReason | 'manual';
  /**
   * 1-based place in the selection order (manual blocks by address, then
   * score entries highest first): set for what passed every check but the
   * cap, so `rank > maximumRules` is `cap`.
   */
  readonly rank?: number;
}
