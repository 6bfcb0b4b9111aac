import type { Logger } from 'pino';
import type { EntryDiff } from './diff.js';
import { Serial } from './exec.js';
import type { ApplyOptions, ApplyResult } from './plugin.js';
import type { FirewallEntries } from './entry-columns.js';

/**
 * What one apply found missing or altered. Creations on a first install (no
 * object of the agent's anywhere, and no earlier apply known) are not repairs.
 */
export class Repairs {
  readonly list: string[] = [];
  constructor(
    readonly fresh: boolean,
    /** The caller logs the repairs itself (the watcher, with who is to blame): no line here. */
    readonly callerLogs = false,
  ) {}
  note(what: string): void {
    if (!this.fresh) this.list.push(what);
  }
}

/**
 * The bookkeeping every kernel backend shares: applies and flushes run one at
 * a time, the first apply tells a first install from a repair, and what was
 * created, repaired and changed is logged once, here.
 *
 * Every write reaches the kernel through `apply` or `flush` below (the cycle,
 * the start-up restore and any re-assertion of the last applied set call
 * `apply`), so a filter that must see every write, such as one dropping
 * protected networks, belongs at the top of these two methods, once for all
 * backends.
 */
export abstract class KernelPlugin {
  private readonly serial = new Serial();
  private appliedOnce = false;

  constructor(protected readonly log: Logger) {}

  apply(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    return this.serial.run(() => this.applyNow(entries, options));
  }

  flush(): Promise<void> {
    return this.serial.run(() => this.flushNow());
  }

  protected abstract applyNow(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult>;
  protected abstract flushNow(): Promise<void>;

  /** Start an apply's repair list; `nothingExists`: none of the agent's objects is in the kernel. */
  protected repairs(nothingExists: boolean, options: ApplyOptions): Repairs {
    return new Repairs(!this.appliedOnce && !options.appliedBefore && nothingExists, options.callerLogsRepairs);
  }

  /** Log the apply's outcome (created / repaired / changed) and build its result. */
  protected done(
    repairs: Repairs,
    created: { what: string; fields: object; owned: readonly string[] },
    diff: Pick<EntryDiff, 'added' | 'updated' | 'removed'>,
    mode: ApplyResult['mode'],
    size: number,
    how: Pick<ApplyResult, 'relaid' | 'rebuilt'> = {},
  ): ApplyResult {
    this.appliedOnce = true;
    if (repairs.fresh) this.log.info(created.fields, `created ${created.what}`);
    if (repairs.list.length > 0 && !repairs.callerLogs) this.log.warn({ repaired: repairs.list }, 'firewall objects were missing or altered and have been re-created');
    if (mode !== 'none') this.log.info({ mode, added: diff.added, removed: diff.removed, updated: diff.updated, size }, `${created.what}: entries updated`);
    return { added: diff.added, removed: diff.removed, updated: diff.updated, mode, repaired: repairs.list, owned: created.owned, ...how };
  }

}
