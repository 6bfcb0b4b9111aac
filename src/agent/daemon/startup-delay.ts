import type { Logger } from '../../log.js';

export interface StartupDelayInput {
  /** Epoch s of the last successful sync, if any. */
  lastSuccessAt: number | undefined;
  /** Epoch s now. */
  now: number;
  /** sync_time in force, minutes. */
  syncTimeMinutes: number;
  /** startup_delay_seconds from config.json. */
  maxDelaySeconds: number;
  /** Milliseconds in a minute (60000; tests shorten it, and the delay with it, as they do the jitter). */
  minuteMs: number;
  /** Uniform in [0, 1). */
  random: () => number;
}

/**
 * Milliseconds until the daemon's first sync. At once when there is no successful sync younger
 * than sync_time (the host may be missing decisions: nothing to wait for). Otherwise the
 * restored set protects the host, and the sync waits a random 0..startup_delay_seconds, never
 * past the moment the next regular sync is due: a fleet restarted together (a rollout, a power
 * event) spreads its first calls over that window instead of sending them in one second.
 */
export function startupDelayMs(i: StartupDelayInput): number {
  if (i.lastSuccessAt === undefined || i.maxDelaySeconds <= 0 || i.lastSuccessAt > i.now) return 0;
  const scale = i.minuteMs / 60_000;
  const sinceMs = (i.now - i.lastSuccessAt) * 1000;
  const dueInMs = i.syncTimeMinutes * i.minuteMs - sinceMs;
  if (dueInMs <= 0) return 0;
  return Math.min(dueInMs, i.maxDelaySeconds * 1000 * scale) * i.random();
}

/** The start-up delay at `run`, logged when there is one: a host that waits says why and for how long. */
export function firstSyncDelay(i: Omit<StartupDelayInput, 'now'>, logger: Logger): number {
  const now = Math.floor(Date.now() / 1000);
  const ms = startupDelayMs({ ...i, now });
  if (ms > 0) {
    logger.info(
      { delayMs: Math.round(ms), lastSuccessAt: i.lastSuccessAt },
      `first sync in ${Math.round(ms / 1000)} s: the last successful sync is ${now - i.lastSuccessAt!} s old, the restored set protects meanwhile (startup_delay_seconds)`,
    );
  }
  return ms;
}
