import type { Logger } from '../../log.js';
import { FUTURE_TOLERANCE_S } from '../../feed/pull.js';
import { readFileSync } from 'node:fs';
import type { SmallState } from '../state/store.js';

/** Injectable clocks: wall = epoch seconds (can be stepped), mono = seconds since boot (cannot). */
export interface Clocks {
  wall: () => number;
  mono: () => number;
  boot: () => string | undefined;
}

/** This boot's id: the monotonic clock means something only within one boot. */
function bootId(): string | undefined {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** process.hrtime is CLOCK_MONOTONIC: since boot, the same in every process of one boot. */
export const systemClocks: Clocks = {
  wall: () => Date.now() / 1000,
  mono: () => Number(process.hrtime.bigint()) / 1e9,
  boot: bootId,
};

/** A difference between the wall and monotonic clocks beyond this is a step (NTP slews far less). */
export const STEP_THRESHOLD_S = 120;

export interface ClockCheck {
  /** Seconds the wall clock moved beyond the monotonic clock since the last cycle (negative: back); undefined if unknown. */
  step: number | undefined;
  /** Patch for the state: stored instants in the future cleared, the clocks recorded. */
  patch: Partial<SmallState>;
  /** Names of the stored instants that were in the future and are now treated as unknown. */
  cleared: string[];
}

/**
 * Compare the wall clock's progress since the last cycle with the monotonic clock's, and
 * treat stored instants that lie in the future as unknown: after the clock came back from a
 * forward step, a `lastFullPullAt` in the future would otherwise stop full resyncs for good,
 * and a cursor in the future would skip every indicator stamped before it.
 */
export function checkClock(s: SmallState, clocks: Clocks = systemClocks): ClockCheck {
  const wall = clocks.wall();
  const mono = clocks.mono();
  const boot = clocks.boot();
  let step: number | undefined;
  if (s.clock && s.clock.boot === boot && boot !== undefined && mono >= s.clock.mono) {
    const d = wall - s.clock.wall - (mono - s.clock.mono);
    if (Math.abs(d) > STEP_THRESHOLD_S) step = d;
  }
  const patch: Partial<SmallState> = { clock: { wall, mono, boot } };
  const cleared: string[] = [];
  const future = (t: number | undefined) => t !== undefined && t > wall + FUTURE_TOLERANCE_S;
  if (future(s.lastFullPullAt)) {
    patch.lastFullPullAt = undefined;
    cleared.push('lastFullPullAt');
  }
  if (future(s.cursor)) {
    // The cursor and the cache built with it are not to be trusted: the next pull is a full one.
    patch.cursor = undefined;
    patch.lastFullPullAt = undefined;
    cleared.push('cursor');
  }
  if (future(s.lastSuccessAt)) {
    patch.lastSuccessAt = undefined;
    cleared.push('lastSuccessAt');
  }
  if (s.pendingShrink && future(s.pendingShrink.at)) {
    patch.pendingShrink = { ...s.pendingShrink, at: Math.floor(wall) };
    cleared.push('pendingShrink.at');
  }
  return { step, patch, cleared };
}

export function logClockCheck(c: ClockCheck, logger: Logger): void {
  if (c.step !== undefined) {
    const dir = c.step > 0 ? 'forward' : 'back';
    logger.warn({ stepSeconds: Math.round(c.step) }, `the system clock was stepped ${dir} by ${Math.round(Math.abs(c.step))} s since the last cycle`);
  }
  if (c.cleared.length) {
    logger.warn({ cleared: c.cleared }, `stored instants lie in the future (the clock was stepped back?); treated as unknown: ${c.cleared.join(', ')}`);
  }
}
