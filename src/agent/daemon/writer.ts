/**
 * The daemon's one writer at a time. Every write of the firewall or the resolver
 * (each of a cycle's writes, a local override being applied, a changed manual
 * decision, a repair between cycles), with the applied record saved alongside,
 * runs through `run`, one job after the other in the order asked. A job is held
 * only while it writes, never while a cycle or a poll waits on the network: a
 * repair or an override gets in between a cycle's writes within seconds, however
 * slow the pull. The agent lock keeps other processes (a manual `sync`, `allow`
 * without a daemon) out as well.
 */
export class Writer {
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;

  /** True while a job runs or waits: periodic work that can simply come back later skips its turn. */
  get busy(): boolean {
    return this.pending > 0;
  }

  run<T>(job: () => Promise<T>): Promise<T> {
    this.pending++;
    const result = this.tail.then(job);
    this.tail = result.then(
      () => this.pending--,
      () => this.pending--,
    );
    return result;
  }

  /** Resolves once every job asked so far has ended. */
  async idle(): Promise<void> {
    while (this.pending > 0) await this.tail;
  }
}
