import type { Logger } from '../../log.js';
import { errorMessage } from '../../errors.js';

export interface SchedulerOptions {
  /** One cycle; resolves true on success. Never runs twice at once. */
  run: () => Promise<boolean>;
  /** Milliseconds until the next cycle, given how the last one went. */
  delayAfter: (ok: boolean) => number;
  logger: Logger;
  onScheduled?: (atMs: number) => void;
}

/**
 * A timer chain: the next cycle is scheduled only when the current one has
 * finished, so cycles never overlap, and the delay is computed afresh each time
 * (a new sync_time from the server applies from the next cycle on).
 *
 * Why not node-cron: cron fires on wall-clock boundaries, so a fleet with the
 * same sync_time would hit the API in the same second (the opposite of jitter),
 * intervals such as 7 or 90 minutes have no exact cron expression, and a slow
 * cycle would overlap the next firing.
 */
export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  private paused = false;

  constructor(private readonly opts: SchedulerOptions) {}

  /** The first cycle now, or after `delayMs` (the start-up delay; a resume(true) meanwhile runs it at once). */
  start(delayMs = 0): void {
    if (delayMs > 0) this.schedule(delayMs);
    else void this.tick();
  }

  /** Run a cycle now (unless one is running), then continue the chain. */
  private tick(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    // A run asked for while a timer is pending (resume(true) after resume(false):
    // two reloads close together) replaces that timer; left running, it would
    // start a second timer chain and double the cycle rate for good.
    clearTimeout(this.timer);
    this.timer = undefined;
    this.inFlight = (async () => {
      let ok = false;
      try {
        ok = await this.opts.run();
      } catch (err) {
        this.opts.logger.error(`cycle crashed: ${errorMessage(err)}`);
      } finally {
        this.inFlight = undefined;
      }
      if (!this.stopped && !this.paused) this.schedule(this.opts.delayAfter(ok));
    })();
    return this.inFlight;
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    const delay = Math.max(0, Math.round(ms));
    this.timer = setTimeout(() => void this.tick(), delay);
    this.opts.onScheduled?.(Date.now() + delay);
  }

  /** Stop scheduling and wait for the cycle in flight. */
  async pause(): Promise<void> {
    this.paused = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  /**
   * Stop scheduling without waiting for the cycle in flight (a reload: answered at
   * once). release(true) then runs a cycle as soon as the one in flight has ended.
   */
  hold(): void {
    this.paused = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  release(runNow: boolean): void {
    if (this.stopped) return;
    this.paused = false;
    if (!this.inFlight) {
      this.resume(runNow);
      return;
    }
    const current = this.inFlight;
    void current.then(() => {
      if (this.stopped || this.paused) return;
      if (runNow) void this.tick();
    });
  }

  resume(runNow: boolean): void {
    if (this.stopped) return;
    this.paused = false;
    if (runNow) void this.tick();
    else this.schedule(this.opts.delayAfter(true));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }
}
