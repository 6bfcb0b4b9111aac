import { errorMessage, WcfError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { AgentConfig } from '../../config/load.js';
import type { Settings } from '../../config/server.js';
import { previousSettings } from '../cycle/cycle.js';
import { type CycleOutcome, type PlanResult } from '../cycle/types.js';
import { runBoundedCycle } from '../cycle/bounded-cycle.js';
import { localProtectedSet } from '../cycle/protect-applied.js';
import { reapplyLast } from '../cycle/reapply.js';
import type { StateStore } from '../state/store.js';
import type { AppliedColumns } from '../state/applied-columns.js';
import { withLock } from '../state/lock.js';
import { Scheduler } from './scheduler.js';
import { flushDns } from '../cycle/url-feed-front.js';
import { Writer } from './writer.js';
import { FastPath } from './fast-path.js';
import { restoreWithOverrides } from '../cycle/overrides-apply.js';
import { AppliedMemory } from '../state/applied-memory.js';
import { releaseCycleMemory } from '../../util/release-memory.js';
import { Watcher } from './watcher.js';
import { firstSyncDelay } from './startup-delay.js';
import { allowReads, stopReads } from '../../exec/children.js';
import { announceReload } from './reload.js';
import type { DaemonParts } from './parts.js';
import { DaemonHealth } from './health.js';
import { KernelTruth } from './kernel-truth.js';
import { nextCycleDelayMs } from './cycle-delay.js';

export interface DaemonOptions {
  logger: Logger;
  /** Builds the parts from a config; called at start and on each reload. */
  open: (config: AgentConfig) => Promise<DaemonParts>;
  /** Re-reads config.json (SIGHUP); throws ConfigError on a bad file. */
  reload: () => AgentConfig;
  initialConfig: AgentConfig;
  /** Milliseconds in a minute (tests shorten it; always 60000 in production). */
  minuteMs?: number;
  /** Called after each cycle (tests, metrics). */
  onCycle?: (outcome: CycleOutcome) => void;
  /** Called after each repair the watcher made between cycles (metrics). */
  onRepair?: (objects: readonly string[]) => void;
  random?: () => number;
}

/**
 * `wcf-agent run`: restore the last known good set before any network call,
 * sync at once (or after the start-up delay when a recent sync exists), then every sync_time
 * minutes plus jitter. Failures back off (bounded, jittered) and never remove what is applied. stop() ends the cycle
 * in flight (API calls are aborted; an apply is atomic and is let finish).
 */
export class Daemon {
  private parts!: DaemonParts;
  /** The parts each cycle in flight runs with: after a reload, not the current ones (stop() aborts their calls too). */
  private readonly cycling = new Set<DaemonParts>();
  private readonly logger: Logger;
  private readonly opts: DaemonOptions;
  private readonly scheduler: Scheduler;
  private failures = 0;
  private stopping = false;
  /** Settings in force: read from the state once at start, then what each cycle answers (not re-read from disk). */
  private settings!: Settings;
  /** The reload in progress: reloads run one after the other, never interleaved. */
  private reloading: Promise<boolean> = Promise.resolve(true);
  /**
   * One writer at a time: each write of a cycle, the fast path's applies (overrides, decision
   * polls) and the watcher's repairs queue here. Held only while writing, never across a pull.
   */
  private readonly writer = new Writer();
  private readonly fast: FastPath;
  /** The last set applied, for the watcher's repairs between cycles. */
  private readonly memory = new AppliedMemory();
  private watcher: Watcher | undefined;
  private reloads = 0; // configurations taken by SIGHUP so far (each cycle logs the one it ran with)
  /** The start-up restore, while it runs (a stop waits for it before reads are allowed again). */
  private restoring: Promise<void> | undefined;
  /** What the watcher last found in the kernel (and each apply wrote): readiness, `status` and the metrics answer from it. */
  readonly truth = new KernelTruth();
  /** For /healthz and /readyz: the loop turns, and the firewall holds the last applied set. */
  readonly health: DaemonHealth;

  constructor(opts: DaemonOptions) {
    this.opts = opts;
    this.logger = opts.logger;
    const minute = opts.minuteMs ?? 60_000;
    const random = opts.random ?? Math.random;
    this.fast = new FastPath({ parts: () => this.parts, settings: () => this.settings, writer: this.writer, logger: this.logger, random });
    this.health = new DaemonHealth({ minuteMs: minute, view: () => ({
      plugin: this.parts?.plugin, running: this.settings?.running ?? false, applied: this.memory.lastingCount(Date.now(), 0),
      cycleDeadlineSeconds: this.opts.initialConfig.cycle_deadline_seconds, truth: this.truth.get(), watched: this.watcher?.active ?? false }) });
    this.scheduler = new Scheduler({
      logger: this.logger,
      // Once the cycle's frame is gone: what it left (its plan included) is then garbage. On the
      // next turn of the event loop, so the next sync's time is recorded first (for `status`)
      // rather than after a collection that can take a while at a million entries.
      run: () => this.health.during(() => this.cycle()).finally(() => void setImmediate(releaseCycleMemory)),
      delayAfter: (ok) =>
        nextCycleDelayMs({
          ok,
          failures: this.failures,
          syncTimeMinutes: this.settings.sync_time,
          jitterSeconds: this.parts.config.jitter_seconds,
          minuteMs: minute,
          random,
        }),
      onScheduled: (atMs) => (this.health.scheduled(atMs), this.safeUpdate({ nextSyncAt: Math.floor(atMs / 1000) })),
    });
  }

  async start(): Promise<void> {
    this.parts = this.remembering(await this.opts.open(this.opts.initialConfig));
    this.settings = previousSettings(this.parts).settings;
    this.restoring = this.health.during(() => this.restore());
    await this.restoring;
    if (this.stopping) return;
    await this.fast.start();
    const { minuteMs = 60_000, random = Math.random } = this.opts;
    this.scheduler.start(firstSyncDelay({ lastSuccessAt: this.parts.state.small.lastSuccessAt, syncTimeMinutes: this.settings.sync_time, maxDelaySeconds: this.parts.config.startup_delay_seconds, minuteMs, random }, this.logger));
    this.startWatcher();
  }

  /** The plugin with every successful apply remembered (for the watcher's repairs) and taken as what the kernel holds now. */
  private remembering(parts: DaemonParts): DaemonParts {
    return { ...parts, plugin: this.memory.wrap(parts.plugin, () => this.truth.written('the last apply wrote the whole set')) };
  }

  /** Run `fn` after the cycle, override apply or watcher check in flight (this process only). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.writer.run(fn);
  }
  /** Between cycles, put the agent's objects back when another tool removes them (watch_interval_seconds). */
  private startWatcher(): void {
    const { config, plugin, state } = this.parts;
    this.truth.followRepairs(() => this.watcher?.recheck('a write put back damage: checking that everything is back'));
    this.watcher = new Watcher({
      plugin,
      memory: this.memory,
      names: { setName: config.set_name, chainName: config.chain_name, tableName: config.table_name },
      netns: config.netns,
      intervalSeconds: config.watch_interval_seconds,
      logger: this.logger,
      serial: (fn) => this.serial(fn),
      locked: (fn) =>
        withLock(config.state_dir, async () => {
          state.refresh(); // a manual sync may have written state.json since
          await fn();
        }),
      protect: async (entries) => {
        const protectedSet = await localProtectedSet(config, state, this.logger, { offline: true });
        // On the columns (a million entries made into objects cost a repair a second).
        return entries.filter((i) => {
          const member = protectedSet.memberFor({ start: entries.starts[i]!, end: entries.endAt(i) });
          if (!member) return true;
          const cidr = entries.text(i);
          this.logger.warn({ cidr, source: member.source }, `repair: ${cidr} is protected (${member.source} ${member.cidr.text}) and is not put back`);
          return false;
        });
      },
      truth: this.truth,
      cycleRunning: () => this.cycling.size > 0,
      onRepair: (objects, at) => {
        const prev = state.small.repairs;
        this.safeUpdate({ repairs: { count: (prev?.count ?? 0) + 1, lastAt: at, objects: [...objects] } });
        state.noteHistory(plugin.name, 'repair', at, 'repaired', `put back after another tool removed them: ${objects.join(', ')}`);
        this.opts.onRepair?.(objects);
      },
    });
    this.watcher.start();
  }

  /**
   * Re-apply the last known good set so a reboot without network keeps the host protected,
   * through the protected set as it is now (computed locally, no DNS): an address added to the
   * allowlist, or become the host's own, since that set was applied does not come back.
   */
  private async restore(): Promise<void> {
    const { config, plugin, state } = this.parts;
    const now = Math.floor(Date.now() / 1000);
    if (!this.settings.running || !state.hasApplied(plugin.name)) {
      this.logger.info({ plugin: plugin.name }, 'no last known good set to restore');
      return;
    }
    try {
      const protectedSet = await localProtectedSet(config, state, this.logger, { offline: true });
      const r = await reapplyLast({
        plugin, state, logger: this.logger, protectedSet, now, capacity: this.settings.maximum_rules, why: 'restore',
        shape: (kept) => this.withOverrides(kept, protectedSet, now),
      });
      if (!r) {
        this.logger.info({ plugin: plugin.name }, 'no last known good set to restore');
        return;
      }
      this.logger.info({ plugin: plugin.name, entries: r.kept.length, added: r.result?.added, since: r.last.ts, protectedLeftOut: r.removed }, `restored the last known good set (${r.kept.length} entries) before any network call`);
    } catch (err) {
      this.logger.error({ code: (err as WcfError).code }, `could not restore the last known good set: ${errorMessage(err)}`);
    }
  }

  /** The restored set with the local overrides in force now (an allow holds from the first write); without them if their file is unusable. */
  private withOverrides(kept: AppliedColumns, protectedSet: Parameters<typeof restoreWithOverrides>[1]['protectedSet'], now: number): AppliedColumns {
    try {
      return restoreWithOverrides(kept, { config: this.parts.config, protectedSet, maximumRules: this.settings.maximum_rules, now, logger: this.logger });
    } catch (err) {
      this.logger.error(`restore without the local overrides: ${errorMessage(err)}`);
      return kept;
    }
  }

  private async cycle(): Promise<boolean> {
    if (this.stopping) return true;
    const configGeneration = this.reloads; // the configuration it runs with, whatever a reload meanwhile
    const parts = this.parts;
    const { config, api, state, plugin } = parts;
    const deps = { config, api, state, logger: this.logger, write: this.writer.run.bind(this.writer), onSettings: (s: Settings) => (this.settings = s), onApplied: (p: PlanResult, at: number) => this.fast.applied(p, at) };
    this.cycling.add(parts);
    // The agent lock for the whole cycle (no manual sync meanwhile); the writer only for its writes.
    const outcome = await this.fast
      .cycle(() => withLock(config.state_dir, () => runBoundedCycle(deps, plugin)))
      .catch((err: unknown) => {
        // The lock is held by a manual `sync --once`, or the state dir broke: try again later.
        this.logger.warn(`cycle skipped: ${errorMessage(err)}`);
        return undefined;
      })
      .finally(() => this.cycling.delete(parts));
    const ok = outcome?.record.ok ?? false;
    this.failures = ok ? 0 : this.failures + 1;
    if (outcome) {
      this.settings = outcome.settings;
      this.fast.onCycle(outcome);
      const r = outcome.record;
      if (r.ok) this.logger.info({ applied: r.applied, manual: r.byReason.manual, score: r.byReason.score, code: r.code, ms: r.durationMs, configGeneration }, 'cycle done');
      // Refused because an object under the agent's names is someone else's: readiness says so, not "repairing".
      else if (r.errorCode === 'WCF_ERR_NOT_OWNED' && r.message) this.truth.foreign(r.message);
      this.opts.onCycle?.(outcome);
    }
    return ok;
  }

  /** SIGHUP: a valid config.json is taken, else the old one kept; two signals run one after the other, never interleaved. */
  reload(): Promise<boolean> {
    this.reloading = this.reloading.catch(() => false).then(() => this.reloadNow());
    return this.reloading;
  }

  private async reloadNow(): Promise<boolean> {
    let next: AgentConfig;
    try {
      next = this.opts.reload();
    } catch (err) {
      this.logger.error(`config reload refused, keeping the running configuration: ${errorMessage(err)}`);
      return false;
    }
    const old = this.parts;
    const namesChanged = next.set_name !== old.config.set_name || next.chain_name !== old.config.chain_name || next.table_name !== old.config.table_name || next.plugin !== old.config.plugin;
    this.scheduler.hold();
    // Answered at once, whatever runs (see reload.ts); the watcher's check in flight finishes on its own.
    const watcherStopped = this.watcher?.stop();
    this.watcher = undefined;
    let parts: DaemonParts | undefined;
    try {
      parts = this.remembering(await this.opts.open(next));
    } catch (err) {
      this.logger.error(`config reload failed, keeping the running configuration: ${errorMessage(err)}`);
    }
    if (parts) this.parts = parts;
    if (parts) announceReload(this.writer, this.logger, next.configPath, ++this.reloads, old, namesChanged);
    await watcherStopped;
    if (this.stopping) return true;
    this.scheduler.release(parts !== undefined);
    this.startWatcher();
    return parts !== undefined;
  }

  /** SIGTERM/SIGINT: abort the cycle in flight, wait for it, apply on_stop. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (!this.parts) return; // stopped before start() had built anything
    this.parts.api.client.abort();
    for (const p of this.cycling) p.api.client.abort(); // a cycle that began before a reload uses the old client
    stopReads(); // a listing in flight is ended (minutes at a million nft elements); an apply in flight finishes
    await this.watcher?.stop();
    await this.scheduler.stop();
    this.health.stopped();
    await this.fast.stop();
    await this.writer.idle();
    // The restore too: its reads are ended now, and one it starts next (after a read it could do
    // without) must be ended as well, not wait at the end of a stop that already let reads run.
    await this.restoring;
    allowReads();
    if (this.parts.config.on_stop === 'flush') {
      try {
        await this.parts.plugin.flush();
        this.parts.state.historyOfStopFlush(this.parts.plugin.name);
        this.logger.info('on_stop=flush: removed the agent rules');
      } catch (err) {
        this.logger.error(`on_stop flush failed: ${errorMessage(err)}`);
      }
      // The names blocked at the resolver too (url_feed), as `wcf-agent flush` does.
      const { config, plugin } = this.parts;
      await flushDns({ config, logger: this.logger, dryRun: plugin.name === 'dry-run', now: Math.floor(Date.now() / 1000) }).catch((err: unknown) =>
        this.logger.error(`on_stop flush of the resolver names failed: ${errorMessage(err)}`),
      );
    }
    await this.parts.api.client.close().catch(() => undefined);
    this.safeUpdate({ nextSyncAt: undefined });
  }

  private safeUpdate(patch: Parameters<StateStore['update']>[0]): void {
    try {
      this.parts.state.update(patch);
    } catch (err) {
      this.logger.warn(`state write failed: ${errorMessage(err)}`);
    }
  }
}
