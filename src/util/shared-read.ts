/**
 * A read that many callers may ask for at once (a scrape, a readiness probe,
 * a flood of either): at most one runs at a time, every caller waiting meanwhile
 * shares it, and a new one starts only once the last answer is older than
 * `minAgeMs(lastDurationMs)`: never more often than the read takes, so a read
 * that costs a second is not repeated every second by a busy caller. Until then
 * the last answer is given again (a failed read's error included).
 */
export class SharedRead<T> {
  private inFlight: Promise<T> | undefined;
  private last: { at: number; ms: number; value: Promise<T> } | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly minAgeMs: (lastDurationMs: number) => number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get(): Promise<T> {
    if (this.inFlight) return this.inFlight;
    const t = this.now();
    if (this.last && t - this.last.at < this.minAgeMs(this.last.ms)) return this.last.value;
    const value = this.read();
    this.inFlight = value;
    const settle = () => {
      this.inFlight = undefined;
      this.last = { at: this.now(), ms: this.now() - t, value };
    };
    value.then(settle, settle);
    return value;
  }

  /** Forget the last answer (what it read changed: a reload). */
  reset(): void {
    this.last = undefined;
  }
}
