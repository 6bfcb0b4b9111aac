/**
 * The watcher's flapping guard, pure: when another tool keeps removing the
 * agent's objects (two firewall managers fighting), repairs are spaced out
 * instead of answering every removal at once: the first few are immediate,
 * then at most one per 10 s, then one per minute. A quiet spell ends the fight.
 */

/** Repairs in a row (each within QUIET_MS of the previous) that are not held back. */
export const FREE_REPAIRS = 3;
/** Repairs in a row, after which only one a minute is made. */
export const SLOW_AFTER = 6;
export const GAP_FAST_MS = 10_000;
export const GAP_SLOW_MS = 60_000;
/** No repair needed for this long: the fight is over. */
export const QUIET_MS = 5 * 60_000;

export class RepairGuard {
  private streak = 0;
  private lastAt = -Infinity;
  private toldFight = false;

  /** Milliseconds to wait before the next repair may run (0: now). */
  waitMs(nowMs: number): number {
    if (nowMs - this.lastAt >= QUIET_MS) return 0;
    const gap = this.streak < FREE_REPAIRS ? 0 : this.streak < SLOW_AFTER ? GAP_FAST_MS : GAP_SLOW_MS;
    return Math.max(0, this.lastAt + gap - nowMs);
  }

  /** Record a repair. */
  repaired(nowMs: number): void {
    this.streak = nowMs - this.lastAt >= QUIET_MS ? 1 : this.streak + 1;
    if (this.streak === 1) this.toldFight = false;
    this.lastAt = nowMs;
  }

  /** True once per fight: the first time a repair is held back (the moment to say so, loudly). */
  tellOnce(): boolean {
    if (this.toldFight) return false;
    this.toldFight = true;
    return true;
  }

  /** Current spacing between repairs, for the loud line. */
  gapMs(): number {
    return this.streak < FREE_REPAIRS ? 0 : this.streak < SLOW_AFTER ? GAP_FAST_MS : GAP_SLOW_MS;
  }
}
