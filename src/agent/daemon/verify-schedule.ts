/**
 * When the watcher checks the entries themselves (FirewallPlugin.verify), not
 * only the objects. The object probe is cheap at any size; a verification is
 * not (nftables at a million entries: about 3 s of nft for the addresses and,
 * beside 150,000 networks, a 6 s read of those), so it runs when there is a
 * reason, and never back to back:
 *
 * - **suspect**: something may have changed the elements: a transaction by
 *   another process that can write nft sets, the event source down or just
 *   (re)started (changes meanwhile were not heard);
 * - **periodic**: with nothing heard, still every PERIODIC_MS (or every
 *   watch interval while the host has no event source for these changes:
 *   ipset, legacy iptables, or the source down);
 * - a verification starts at least max(MIN_GAP_MS, the last one's duration)
 *   after the last one ended: under another tool's constant churn it takes at
 *   most half of one core, and a removal is put back within one verification,
 *   one gap and one more verification (at a million entries about 20 s; a
 *   single change on a quiet host within one verification, about 6 s).
 */

/** The shortest wait between two verifications. */
export const MIN_GAP_MS = 2000;
/** A verification at least this often with nothing heard (the event source runs, nothing else prompted one). */
export const PERIODIC_MS = 15 * 60_000;

export class VerifySchedule {
  private why: string | undefined;
  private lastEnd = Number.NEGATIVE_INFINITY;
  private lastMs = 0;
  private lastStart = Number.NEGATIVE_INFINITY;

  constructor(private readonly now: () => number = Date.now) {}

  /** Something may have changed the elements (the first reason is kept until a verification starts). */
  suspect(why: string): void {
    this.why ??= why;
  }

  /** What was suspected since the last verification began, or undefined. */
  get suspected(): string | undefined {
    return this.why;
  }

  /** Why a verification is wanted now (suspect, or `periodicMs` since the last start), or undefined. */
  wanted(periodicMs: number): string | undefined {
    if (this.why) return this.why;
    if (this.now() - this.lastStart >= periodicMs) return 'periodic check of the entries';
    return undefined;
  }

  /** Milliseconds until a verification may start (0: now). */
  waitMs(): number {
    return Math.max(0, this.lastEnd + Math.max(MIN_GAP_MS, this.lastMs) - this.now());
  }

  /** A verification starts: what was suspected so far is what it answers. */
  started(): void {
    this.why = undefined;
    this.lastStart = this.now();
  }

  /** It ended (whatever it found) after `ms`. */
  ended(ms: number): void {
    this.lastEnd = this.now();
    this.lastMs = ms;
  }
}
