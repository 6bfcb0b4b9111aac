/**
 * Wall-clock milliseconds spent in each phase of one cycle. Cheap (one
 * performance.now() per phase), so it is always on; `sync --once --json`
 * prints it and the daemon logs it at debug level, which is what the
 * benchmark (scripts/bench.ts) reads to tell where a cycle's time goes.
 */
export type PhaseTimings = Record<string, number>;

export class PhaseClock {
  readonly ms: PhaseTimings = {};
  private last = performance.now();

  /** Charge the time since the previous lap (or construction) to `phase`. */
  lap(phase: string): void {
    const now = performance.now();
    this.ms[phase] = Math.round(((this.ms[phase] ?? 0) + now - this.last) * 10) / 10;
    this.last = now;
  }
}
