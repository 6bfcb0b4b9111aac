export interface DelayInput {
  /** How the cycle that just ended went. */
  ok: boolean;
  /** Failed cycles in a row, this one included (0 after a success). */
  failures: number;
  /** sync_time in force, minutes. */
  syncTimeMinutes: number;
  /** jitter_seconds from config.json. */
  jitterSeconds: number;
  /** Milliseconds in a minute (60000; tests shorten it). */
  minuteMs: number;
  /** Uniform in [0, 1). */
  random: () => number;
}

/**
 * Milliseconds until the next cycle. After a success: sync_time plus a random
 * 0..jitter_seconds. After a failure: exponential backoff from half a minute,
 * doubling per failure in a row, with jitter (half to all of it), never later
 * than the regular schedule and never sooner than a second.
 */
export function nextCycleDelayMs(i: DelayInput): number {
  const syncMs = i.syncTimeMinutes * i.minuteMs;
  if (i.ok) return syncMs + i.jitterSeconds * 1000 * (i.minuteMs / 60_000) * i.random();
  const backoff = Math.min(syncMs, (i.minuteMs / 2) * 2 ** Math.min(Math.max(i.failures, 1) - 1, 10));
  return Math.max(i.minuteMs / 60, backoff * (0.5 + i.random() / 2));
}
