/**
 * Deadlines for API calls. The HTTP timeouts (src/api/http.ts) are idle timeouts: a server that sends one
 * byte every few seconds never trips them, and one request could last forever (cycles never
 * overlap, so the daemon would stop syncing). These bound the whole of a request and of a cycle.
 */

export interface RequestDeadlineOptions {
  /** Milliseconds a request may take in all (connect, headers, body). */
  deadlineMs: number;
  /**
   * Large answers (feed pages) may run past `deadlineMs` while their body still arrives at this
   * many bytes a second or more on average; 0 = never past `deadlineMs`.
   */
  minBytesPerSecond: number;
}

/** One request's overall deadline: aborts `signal` when passed. `received` is fed by the body reader. */
export class RequestDeadline {
  private readonly ctl = new AbortController();
  private readonly started = performance.now();
  private timer: NodeJS.Timeout | undefined;
  received = 0;

  constructor(private readonly o: RequestDeadlineOptions, private readonly onExpire: (elapsedMs: number) => Error) {
    this.timer = setTimeout(() => this.check(), o.deadlineMs);
    this.timer.unref?.();
  }

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  get expired(): boolean {
    return this.ctl.signal.aborted;
  }

  private check(): void {
    const elapsed = performance.now() - this.started;
    // Still flowing fast enough: look again in a second (a feed page over a slow but honest link).
    if (this.o.minBytesPerSecond > 0 && this.received >= (this.o.minBytesPerSecond * elapsed) / 1000) {
      this.timer = setTimeout(() => this.check(), 1000);
      this.timer.unref?.();
      return;
    }
    this.ctl.abort(this.onExpire(Math.round(elapsed)));
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** The cycle's deadline: started by the caller of a cycle, it aborts every request of the cycle still running. */
export class CycleDeadline {
  private ctl = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  get signal(): AbortSignal {
    return this.ctl.signal;
  }

  start(ms: number): void {
    this.stop();
    this.ctl = new AbortController();
    this.timer = setTimeout(() => this.ctl.abort(new Error(`cycle deadline of ${Math.round(ms / 1000)} s passed`)), ms);
    this.timer.unref?.();
  }

  /** Ends the cycle's deadline; later calls (between cycles) are not aborted by it. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.ctl.signal.aborted) this.ctl = new AbortController();
  }
}
