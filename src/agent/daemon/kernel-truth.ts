/**
 * What the daemon knows of the kernel between cycles: whether the last look
 * found every object and every entry it applied, and when. /readyz, `status`
 * and the metrics answer from here (kept up to date by the watcher's checks),
 * never by reading the kernel per request: a readiness probe or a scrape costs
 * no nft run, and they all say the same thing.
 */

export interface TruthView {
  /**
   * `held`: the last look found what was applied; `damaged`: it did not, and a repair is due
   * or failed; `unknown`: not looked at since the last apply (the apply itself wrote it all).
   */
  readonly state: 'held' | 'damaged' | 'unknown';
  /** For people: what was found, or what is wrong. */
  readonly reason: string;
  /** Epoch ms of the last look that found the kernel as applied (an apply counts). */
  readonly confirmedAt?: number;
  /** Entries the last look found missing (0 when held). */
  readonly missing: number;
}

export class KernelTruth {
  private view: TruthView = { state: 'unknown', reason: 'not looked at yet', missing: 0 };
  /** The damage found, kept until a repair or an apply puts things right. */
  private damagedAt: number | undefined;

  constructor(private readonly now: () => number = Date.now) {}

  get(): TruthView {
    return this.view;
  }

  /** A look (probe, verification) found the kernel as applied. */
  held(how: string): void {
    this.damagedAt = undefined;
    this.view = { state: 'held', reason: how, confirmedAt: this.now(), missing: 0 };
  }

  /** A look found objects or entries missing: the kernel does not enforce what was applied until a repair. */
  damaged(reason: string, missing: number): void {
    this.damagedAt ??= this.now();
    this.view = { state: 'damaged', reason, missing, ...(this.view.confirmedAt !== undefined ? { confirmedAt: this.view.confirmedAt } : {}) };
  }

  /** A change heard and not yet checked (the watcher's), or undefined. */
  private unchecked: () => string | undefined = () => undefined;

  /** Where written() asks whether a change was heard that no verification has looked at yet. */
  followSuspicion(unchecked: () => string | undefined): void {
    this.unchecked = unchecked;
  }

  /**
   * The repair (or any successful apply) wrote what is wanted. Damage stays said while a change
   * heard after the verification that found it began is still unchecked: the write put back what
   * that verification found, not what the later change may have removed (seen: a set flushed
   * while a verification was half done; the repair put back the two slices it had found, and
   * readiness said enforcing with three missing). The next verification says which it is.
   */
  written(how: string): void {
    const heard = this.view.state === 'damaged' ? this.unchecked() : undefined;
    if (heard) {
      this.view = { ...this.view, reason: `put back what the last check found missing, checking again after a later change (${heard})` };
      return;
    }
    this.held(how);
  }

  /** Since when the kernel has been found damaged (undefined: it is not). */
  get damagedSince(): number | undefined {
    return this.damagedAt;
  }
}
