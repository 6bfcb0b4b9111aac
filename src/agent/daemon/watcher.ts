import { errorMessage, LockHeldError, type WcfError } from '../../errors.js';
import { NftMonitor, type ApplyResult, type FirewallPlugin, type OwnedNames, type RulesetChange } from '../../firewall/index.js';
import type { EntryColumns } from '../../firewall/entry-columns.js';
import type { Logger } from '../../log.js';
import type { AppliedMemory } from '../state/applied-memory.js';
import { RepairGuard } from './repair-backoff.js';

export interface WatcherOptions {
  readonly plugin: FirewallPlugin;
  readonly memory: AppliedMemory;
  readonly names: OwnedNames;
  readonly netns?: string | undefined;
  /** watch_interval_seconds: the periodic check's period; 0 = no watching at all. */
  readonly intervalSeconds: number;
  readonly logger: Logger;
  /** Runs `fn` when no cycle of this daemon runs (its own serialisation): the read-only check. */
  readonly serial: (fn: () => Promise<void>) => Promise<void>;
  /**
   * Runs `fn` (called inside `serial`) holding the state dir lock, so no manual
   * sync applies meanwhile: the repair. Rejects with LockHeldError when a
   * manual sync holds it (the check is then tried again later).
   */
  readonly locked: (fn: () => Promise<void>) => Promise<void>;
  /** Told after each repair (metrics, state). */
  readonly onRepair: (objects: readonly string[], atSeconds: number) => void;
  /**
   * The entries without those the protected set holds now (the same filter as every other write):
   * an address that became protected since the last apply (the API moved to it, an allowlist edit)
   * is not put back by a repair.
   */
  readonly protect: (entries: EntryColumns) => Promise<EntryColumns>;
}

/** Events that arrive together (a reload rewriting everything) are handled as one check after this quiet time. */
const COALESCE_MS = 100;
/** Entries this close to expiring may already be gone from the kernel: not counted as missing. */
const ENTRY_SLACK_S = 5;
/** The set counts as emptied by someone when it holds less than this share of the entries that should be there. */
const EMPTIED_RATIO = 0.5;
/** A freshly started `nft monitor` listens within milliseconds; the check that covers its start waits this long. */
const MONITOR_SETTLE_MS = 300;

/**
 * Between cycles, puts the agent's objects back within seconds when another
 * tool removes them (a firewall reload, `iptables -F`, `nft flush ruleset`):
 * hears changes from `nft monitor` where the kernel announces them, checks
 * cheaply every watch_interval_seconds where it does not (ipset, legacy
 * iptables, or while the monitor is down), and re-asserts the last applied set
 * from memory through the plugin's apply, the same path as a cycle's repair.
 * Its checks are read-only, so the agent's own applies (which the monitor also
 * hears) cost one check and never a write: no repair loop.
 */
export class Watcher {
  private monitor: NftMonitor | undefined;
  private monitorUp = false;
  private monitorWasUp = false;
  private lostOwn = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private changes: RulesetChange[] = [];
  private readonly guard = new RepairGuard();
  private toldStarted = false;
  private lastError: string | undefined;

  constructor(private readonly opts: WatcherOptions) {}

  start(): void {
    const { plugin, intervalSeconds, logger } = this.opts;
    if (intervalSeconds === 0 || !plugin.check) return;
    this.stopped = false;
    this.monitor = new NftMonitor({
      plugin: plugin.name,
      names: this.opts.names,
      netns: this.opts.netns,
      logger,
      onChange: (c) => {
        // Another process's transaction (the agent's own are not reported): what the sets hold is
        // no longer known from the last apply alone, so the next apply reads them back.
        plugin.distrust?.(`changed by ${c.by ?? 'another process'}`);
        this.trigger(c);
      },
      onState: (up, overflowed) => {
        // Changes made while the event source was down were not heard (not at its first start:
        // the record is this process's own, kept across a reload). A source that died during the
        // agent's own write (its buffer overflowed on a million element events) is not a reason:
        // the quick check on restart still looks at every object, the daily read at the elements.
        if (!up) this.lostOwn = overflowed === true;
        if (up && this.monitorWasUp && !this.lostOwn) plugin.distrust?.('the firewall event source restarted');
        if (up) this.monitorWasUp = true;
        this.monitorUp = up;
        // A removal while the monitor was down (or before it listened) announces nothing: look once.
        if (up) this.trigger(undefined, MONITOR_SETTLE_MS);
      },
    });
    this.monitor.start();
    // nftables changes are all announced while the monitor runs; ipset and legacy iptables are not.
    this.pollTimer = setInterval(() => {
      if (!(plugin.name === 'nftables' && this.monitorUp)) this.trigger(undefined);
    }, intervalSeconds * 1000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.monitor?.stop();
    this.monitor = undefined;
    clearInterval(this.pollTimer);
    clearTimeout(this.checkTimer);
    this.checkTimer = undefined;
    await this.running;
  }

  private trigger(change: RulesetChange | undefined, delayMs = COALESCE_MS): void {
    if (this.stopped) return;
    if (change && this.changes.length < 5) this.changes.push(change);
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.checkTimer) return;
    this.checkTimer = setTimeout(() => {
      this.checkTimer = undefined;
      this.running = this.check().then((retryMs) => {
        this.running = undefined;
        const again = this.again;
        this.again = false;
        if (retryMs !== undefined) this.trigger(undefined, retryMs);
        else if (again) this.trigger(undefined);
      });
    }, delayMs);
  }

  /** One check (and repair); answers when to look again if the repair had to wait. Never rejects. */
  private async check(): Promise<number | undefined> {
    const changes = this.changes;
    this.changes = [];
    let retryMs: number | undefined;
    try {
      await this.opts.serial(async () => {
        retryMs = await this.repairIfNeeded(changes);
      });
      if (!this.toldStarted && !this.stopped) {
        this.toldStarted = true;
        const events = this.monitorUp ? (this.monitor?.source ?? 'nft monitor') : 'none';
        this.opts.logger.info({ intervalSeconds: this.opts.intervalSeconds, events }, 'watching the agent’s firewall objects between cycles');
      }
      this.lastError = undefined;
    } catch (err) {
      const msg = errorMessage(err);
      if (err instanceof LockHeldError) {
        // A manual sync is applying: it repairs what is missing itself; look again afterwards.
        this.opts.logger.debug(`firewall watch check deferred: ${msg}`);
        return this.opts.intervalSeconds * 1000;
      } else if (msg !== this.lastError) {
        // Once per distinct problem: a check every few seconds must not flood the journal.
        this.lastError = msg;
        this.opts.logger.warn({ code: (err as WcfError).code }, `firewall watch check failed, trying again at the next one: ${msg}`);
      }
    }
    return retryMs;
  }

  /** Repairs what the cheap check finds missing; answers the wait when the flapping guard holds the repair back. */
  private async repairIfNeeded(changes: readonly RulesetChange[]): Promise<number | undefined> {
    const { plugin, memory, logger } = this.opts;
    // Counted on the remembered columns: this runs every few seconds, and a million entries
    // made into objects each time was hundreds of MB of garbage between cycles.
    const lasting = memory.lastingCount(Date.now(), ENTRY_SLACK_S);
    if (lasting === undefined || this.stopped) return; // nothing applied by this process yet: the cycle installs
    const checked = await plugin.check!();
    const missing = [...checked.missing];
    // The header count only tells a set emptied (ipset flush) from one that is not; smaller
    // differences (entries left out by the protected filter, timeouts a second apart) are the cycle's.
    const emptied = checked.entries !== undefined && checked.entries < lasting * EMPTIED_RATIO;
    if (emptied) missing.push('entries of the set');
    if (missing.length === 0) return undefined;
    const started = Date.now();
    const wait = this.guard.waitMs(started);
    if (wait > 0) {
      // Held back by the flapping guard: the other tool's events keep coming; look again when a repair is allowed.
      if (this.guard.tellOnce()) {
        const by = [...new Set(changes.flatMap((c) => (c.by ? [c.by] : [])))];
        logger.error(
          { missing, by: by.length ? by : undefined, repairEveryMs: this.guard.gapMs() },
          `another tool keeps removing the agent’s firewall objects (${missing.join(', ')}): repairs are now spaced out ` +
            `(one every ${this.guard.gapMs() / 1000} s, then one a minute); make the other firewall manager leave these objects alone`,
        );
      }
      return wait;
    }
    let result: ApplyResult | undefined;
    let now: { entries: EntryColumns; capacity: number } | undefined;
    // Where a slow repair spent its time (ms), for the log.
    const stages: Record<string, number> = {};
    let mark = started;
    const stage = (name: string) => {
      const t = Date.now();
      stages[name] = t - mark;
      mark = t;
    };
    await this.opts.locked(async () => {
      stage('waitMs');
      // Taken now: the remaining timeouts as of the write, never longer.
      now = memory.entriesNow(Date.now());
      if (!now) return; // flushed meanwhile (running turned off): nothing to put back
      // A fresh read for this apply: a read the last cycle started (before the removal) must not stand for the kernel now.
      plugin.prefetch?.();
      stage('entriesMs');
      const entries = await this.opts.protect(now.entries);
      stage('protectMs');
      result = await plugin.apply(entries, { capacity: now.capacity, appliedBefore: true, callerLogsRepairs: true });
      stage('applyMs');
    });
    if (!result || !now) return undefined;
    const at = Date.now();
    if (result.repaired.length === 0 && result.mode === 'none') {
      // Put back in the meantime (by the other tool itself): nothing was repaired.
      logger.debug({ missing }, 'firewall objects were missing at the check and back by the apply; nothing to repair');
      return undefined;
    }
    const by = [...new Set(changes.flatMap((c) => (c.by ? [c.by] : [])))];
    const objects = result.repaired.length > 0 ? result.repaired : missing;
    logger.warn(
      {
        missing: objects,
        by: by.length ? by : undefined,
        events: changes.flatMap((c) => c.events).slice(0, 5),
        ...(emptied ? { setHeld: checked.entries, setExpected: lasting } : {}),
        entries: now.entries.length,
        ms: at - started,
        ...stages,
      },
      `firewall objects removed by another tool were put back with the last applied set (${now.entries.length} entries): ${objects.join(', ')}`,
    );
    this.opts.onRepair(objects, Math.floor(at / 1000));
    this.guard.repaired(at);
    return undefined;
  }
}
