import { errorMessage, LockHeldError, NotOwnedError, type WcfError } from '../../errors.js';
import { NftMonitor, type ApplyResult, type EntryCheck, type FirewallPlugin, type OwnedNames, type RulesetChange } from '../../firewall/index.js';
import { EntryColumns } from '../../firewall/entry-columns.js';
import type { Logger } from '../../log.js';
import type { AppliedMemory } from '../state/applied-memory.js';
import { releaseCycleMemory } from '../../util/release-memory.js';
import { KernelTruth } from './kernel-truth.js';
import { RepairGuard } from './repair-backoff.js';
import { PERIODIC_MS, VerifySchedule } from './verify-schedule.js';

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
  /** What the checks found, for /readyz, `status` and the metrics (the daemon's one record of it). */
  readonly truth: KernelTruth;
  /** Whether a cycle of this daemon is in flight: a verification waits for its end (see look()). */
  readonly cycleRunning?: () => boolean;
  /** The clock (epoch ms); tests move it. */
  readonly now?: () => number;
}

/** Events that arrive together (a reload rewriting everything) are handled as one check after this quiet time. */
const COALESCE_MS = 100;
/** A freshly started event source listens within milliseconds; the check that covers its start waits this long. */
const MONITOR_SETTLE_MS = 300;
/** How often a verification held back by a cycle in flight looks again. */
const CYCLE_RETRY_MS = 1000;

/**
 * Between cycles, puts the agent's objects and entries back within seconds when
 * another tool removes them (a firewall reload, `iptables -F`, `nft flush
 * ruleset`, `nft flush set`, a deleted element). Two looks, both read-only:
 *
 * - the object probe (FirewallPlugin.check), cheap at any size, on every event
 *   the source reports and every watch interval where no source reports them;
 * - the verification of the entries themselves (FirewallPlugin.verify), which
 *   the probe cannot see, when something may have changed them (see
 *   verify-schedule.ts for when, and what it costs).
 *
 * What is missing is re-asserted from memory through the plugin's apply, the
 * same path as a cycle's repair; the agent's own applies are never reported by
 * the event source, so there is no repair loop.
 */
export class Watcher {
  private monitor: NftMonitor | undefined;
  private monitorUp = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private checkTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;
  private changes: RulesetChange[] = [];
  private readonly guard = new RepairGuard();
  private readonly schedule: VerifySchedule;
  private readonly now: () => number;
  private toldStarted = false;
  private lastError: string | undefined;

  constructor(private readonly opts: WatcherOptions) {
    this.now = opts.now ?? Date.now;
    this.schedule = new VerifySchedule(this.now);
  }

  /** A write put back damage: look at the entries again as soon as a verification may run. */
  recheck(why: string): void {
    this.schedule.suspect(why);
    this.trigger(undefined);
  }

  /** Whether the watcher looks at the kernel at all (watch_interval_seconds > 0 and a kernel backend). */
  get active(): boolean {
    return !this.stopped;
  }

  start(): void {
    const { plugin, intervalSeconds, logger } = this.opts;
    if (intervalSeconds === 0 || !plugin.check) return;
    this.stopped = false;
    // What was restored or applied before anything listened is not known to be intact.
    this.schedule.suspect('the daemon started: changes before the watcher listened were not heard');
    this.monitor = new NftMonitor({
      plugin: plugin.name,
      names: this.opts.names,
      netns: this.opts.netns,
      logger,
      onChange: (c) => {
        // Another process's transaction (the agent's own are not reported).
        if (c.elements) this.schedule.suspect(`changed by ${c.by ?? 'another process'}`);
        this.trigger(c);
      },
      onState: (up) => {
        // Changes made while the event source was down (or before it listened) were not heard.
        if (!up) this.schedule.suspect('the firewall event source stopped');
        else if (this.monitorUp === false) this.schedule.suspect('the firewall event source (re)started');
        this.monitorUp = up;
        if (up) this.trigger(undefined, MONITOR_SETTLE_MS);
      },
    });
    this.monitor.start();
    // nftables changes are all announced while the source runs: then only a periodic verification
    // is due from the timer; ipset and legacy iptables are not announced, so they are looked at each time.
    this.pollTimer = setInterval(() => {
      if (!this.hearsElements || this.schedule.wanted(PERIODIC_MS) !== undefined) this.trigger(undefined);
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

  /** The event source hears every nftables change; for the other backends (and while it is down) nothing is heard. */
  private get hearsElements(): boolean {
    return this.opts.plugin.name === 'nftables' && this.monitorUp;
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

  /** One check (and repair); answers when to look again if something had to wait. Never rejects. */
  private async check(): Promise<number | undefined> {
    const changes = this.changes;
    this.changes = [];
    let retryMs: number | undefined;
    try {
      await this.opts.serial(async () => {
        retryMs = await this.look(changes);
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

  /** The probe, then the entries when due; repairs what is missing. Answers the wait when something had to wait. */
  private async look(changes: readonly RulesetChange[]): Promise<number | undefined> {
    const { plugin, memory } = this.opts;
    if (!memory.holds || this.stopped) return; // nothing applied by this process yet: the cycle installs
    const checked = await plugin.check!();
    if (checked.missing.length > 0) {
      this.opts.truth.damaged(`missing from the kernel: ${checked.missing.join(', ')}`, memory.lastingCount(this.now(), 0) ?? 0);
      return this.repair(checked.missing, changes, {});
    }
    // Damage found earlier and not yet put back (the repair had to wait, or a manual sync made it):
    // looked at again, so that the truth is never left at "damaged" after the kernel was put right.
    const why =
      this.schedule.wanted(this.hearsElements ? PERIODIC_MS : this.opts.intervalSeconds * 1000) ??
      (this.opts.truth.get().state === 'damaged' ? 'damage found earlier' : undefined);
    if (!why || !plugin.verify) {
      if (!plugin.verify) this.opts.truth.held('every object of the agent’s is in the kernel');
      return undefined;
    }
    const wait = this.schedule.waitMs();
    if (wait > 0) return wait;
    // Not beside a cycle: at a million entries the networks' read (200 MB of nft) on top of the
    // cycle's own peak is what would cost the host; the suspicion stays until the cycle has ended.
    if (this.opts.cycleRunning?.()) return CYCLE_RETRY_MS;
    this.schedule.started();
    let found: EntryCheck;
    const started = this.now();
    try {
      // Made only for a backend that has no record of its own to check (nftables has).
      found = await plugin.verify(() => memory.entriesNow(this.now())?.entries ?? new EntryColumns(1));
    } finally {
      this.schedule.ended(this.now() - started);
    }
    this.opts.logger.debug({ why, ...found }, 'checked the agent’s entries in the kernel');
    if (found.missing === 0 && found.extra === 0) {
      this.opts.truth.held(`every entry applied is in the kernel (${found.checked} checked)`);
      return undefined;
    }
    const what = found.missing > 0 ? `${found.missing} of ${found.checked} entries may be missing from the kernel` : `${found.extra} entries the agent did not apply are in its set`;
    this.opts.truth.damaged(what, found.missing);
    return this.repair(['entries of the set'], changes, { why, found: what, missingEntries: found.missing, extraEntries: found.extra, checkMs: found.ms });
  }

  /** Puts the last applied set back; answers the wait when the flapping guard holds the repair back. */
  private async repair(missing: readonly string[], changes: readonly RulesetChange[], fields: object): Promise<number | undefined> {
    const { plugin, memory, logger } = this.opts;
    const started = this.now();
    const by = [...new Set(changes.flatMap((c) => (c.by ? [c.by] : [])))];
    const wait = this.guard.waitMs(started);
    if (wait > 0) {
      // Held back by the flapping guard: the other tool's events keep coming; look again when a repair is allowed.
      if (this.guard.tellOnce()) {
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
      const t = this.now();
      stages[name] = t - mark;
      mark = t;
    };
    try {
      await this.opts.locked(async () => {
        stage('waitMs');
        // Taken now: the remaining timeouts as of the write, never longer.
        now = memory.entriesNow(this.now());
        if (!now) return; // flushed meanwhile (running turned off): nothing to put back
        // A fresh read for this apply: a read the last cycle started (before the removal) must not stand for the kernel now.
        plugin.prefetch?.();
        stage('entriesMs');
        const entries = await this.opts.protect(now.entries);
        stage('protectMs');
        result = await plugin.apply(entries, { capacity: now.capacity, appliedBefore: true, callerLogsRepairs: true, held: now.entries });
        stage('applyMs');
      });
    } catch (err) {
      // Someone else's object under the agent's names: said as such (nothing enforced, nothing repaired).
      if (err instanceof NotOwnedError) this.opts.truth.foreign(err.message);
      throw err;
    }
    if (!result || !now) return undefined;
    const at = this.now();
    this.opts.truth.written(`repaired ${at - started} ms after it was found`);
    // Held again only once a verification that began after this write finds everything (see KernelTruth.written).
    this.recheck('a repair wrote the set: checking that everything is back');
    if (result.repaired.length === 0 && result.mode === 'none') {
      // Put back in the meantime (by the other tool itself): nothing was repaired.
      logger.debug({ missing }, 'firewall objects were missing at the check and back by the apply; nothing to repair');
      return undefined;
    }
    const objects = result.repaired.length > 0 ? result.repaired : missing;
    logger.warn(
      { missing: objects, by: by.length ? by : undefined, events: changes.flatMap((c) => c.events).slice(0, 5), entries: now.entries.length, ms: at - started, ...fields, ...stages },
      `firewall objects or entries removed by another tool were put back with the last applied set (${now.entries.length} entries): ${objects.join(', ')}`,
    );
    this.opts.onRepair(objects, Math.floor(at / 1000));
    this.guard.repaired(at);
    // As after a cycle: a repair at a million entries leaves hundreds of MB that V8 keeps otherwise.
    setImmediate(releaseCycleMemory);
    return undefined;
  }
}
