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
   * or failed; `foreign`: an object under the agent's names is someone else's (another agent's
   * marker, an administrator's table), so nothing of the agent's is enforced and none is
   * repaired; `unknown`: not looked at since the last apply (the apply itself wrote it all).
   */
  readonly state: 'held' | 'damaged' | 'foreign' | 'unknown';
  /** For people: what was found, or what is wrong. */
  readonly reason: string;
  /** Epoch ms of the last look that found the kernel as applied (an apply counts). */
  readonly confirmedAt?: number;
  /** Entries the last look found missing (0 when held). */
  readonly missing: number;
}

export class KernelTruth {
  private view: TruthView = { state: 'unknown', reason: 'not looked at yet', missing: 0 };
  /** The damage found, kept until a look finds the kernel as applied again. */
  private damagedAt: number | undefined;
  private damage = '';

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
    this.damage = reason;
    this.view = { state: 'damaged', reason, missing, ...(this.view.confirmedAt !== undefined ? { confirmedAt: this.view.confirmedAt } : {}) };
  }

  /** An object under the agent's names is not its own (why, naming the owner and how to take it back): nothing is enforced, nothing repaired. */
  foreign(reason: string): void {
    this.damagedAt ??= this.now();
    this.damage = reason;
    this.view = { state: 'foreign', reason, missing: this.view.missing, ...(this.view.confirmedAt !== undefined ? { confirmedAt: this.view.confirmedAt } : {}) };
  }

  /** Asks the watcher for a look at the kernel as soon as one may run (see written()). */
  private recheck: () => void = () => undefined;

  /** Where written() asks for the look that confirms a repair. */
  followRepairs(recheck: () => void): void {
    this.recheck = recheck;
  }

  /**
   * The repair (or any successful apply) wrote what is wanted. Damage stays said until a look
   * that begins after this write finds everything: the write put back what the last look found,
   * not what a later change may have removed, and an apply's own account of what it wrote is not
   * a look at the kernel (seen: a set flushed while a verification was half done, the repair put
   * back the slices it had found, and readiness said enforcing with networks missing until the
   * periodic verification 15 minutes later). Without damage, the apply's word stands.
   */
  written(how: string): void {
    if (this.view.state === 'damaged' || this.view.state === 'foreign') {
      this.view = { ...this.view, state: 'damaged', reason: `${this.damage}; put back, checking that everything is back` };
      this.recheck();
      return;
    }
    this.held(how);
  }

  /** Since when the kernel has been found damaged (undefined: it is not). */
  get damagedSince(): number | undefined {
    return this.damagedAt;
  }
}
