import { errorMessage, LockHeldError, type WcfError } from '../../errors.js';
import type { Settings } from '../../config/server.js';
import type { Logger } from '../../log.js';
import type { SelectedEntry } from '../../policy/types.js';
import { SelectedColumns } from '../../policy/selected-columns.js';
import { listenControl, type ControlServer } from './control-socket.js';
import type { CycleOutcome, PlanResult } from '../cycle/types.js';
import type { DaemonParts } from './parts.js';
import { pollDecisions } from './decision-poll.js';
import { withLock } from '../state/lock.js';
import { applyLocal, baseFromApplied } from '../cycle/overrides-apply.js';
import { loadOverrides } from '../state/overrides-store.js';
import type { Writer } from './writer.js';

/** setTimeout's largest delay (about 24.8 days); a later expiry is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface FastPathOptions {
  parts: () => DaemonParts;
  settings: () => Settings;
  writer: Writer;
  logger: Logger;
  /** Uniform in [0, 1): where in the first interval the polls start. */
  random?: () => number;
}

/**
 * What the daemon applies between cycles, without pulling the score feed: the
 * local overrides as soon as `wcf-agent allow/block` says so over the control
 * socket, the end of a local allow (the entries it held out come back), and a
 * change of the manual decisions found by polling them every
 * `decision_poll_seconds`. Each writes through the daemon's writer (between a
 * cycle's writes too, while it pulls) and under the agent lock, and starts from
 * the last applied cycle's selection without overrides (`base`).
 */
export class FastPath {
  /** Kept as columns between cycles (a million entries as objects would cost ~200 MB); entries again when used. */
  private base: SelectedColumns | undefined;
  private control: ControlServer | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private polling: Promise<void> | undefined;
  /**
   * When the overrides now in the kernel were read (epoch s; the daemon's start before any apply):
   * an allow still in force then is what the next expiry must end, even if it ended while that
   * apply ran (a slow apply, a busy host), which a look at the clock after the apply would miss.
   */
  private mergedAt = Math.floor(Date.now() / 1000);
  /** A cycle runs (its pull included): no decision poll starts, the cycle pulls the decisions itself. */
  private cycling = false;
  /** The server's clock as the last poll's answers gave it (where the next poll may start). */
  private serverTs: number | undefined;
  private firstPoll = true;

  constructor(private readonly o: FastPathOptions) {}

  async start(): Promise<void> {
    const { config } = this.o.parts();
    try {
      this.control = await listenControl(config.state_dir, () => this.overridesChanged(), this.o.logger);
    } catch (err) {
      this.o.logger.warn(`control socket not opened (local overrides wait for the next cycle): ${errorMessage(err)}`);
    }
    this.schedulePoll();
    this.armExpiry();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pollTimer);
    clearTimeout(this.expiryTimer);
    await this.control?.close();
    await this.polling;
  }

  /**
   * A cycle applied `plan` (called inside that write): its selection is the new base. A selection
   * the shrink guard held back, or whose apply failed, never gets here, so it cannot reach the
   * kernel through an override.
   */
  applied(plan: PlanResult, mergedAt: number): void {
    this.base = plan.base;
    this.mergedAt = mergedAt;
  }

  /** After each cycle. */
  onCycle(_outcome: CycleOutcome): void {
    this.armExpiry();
  }

  /** Runs the daemon's cycle: a decision poll in flight ends first, none starts meanwhile (they share the API client's cycle deadline). */
  async cycle<T>(run: () => Promise<T>): Promise<T> {
    this.cycling = true;
    try {
      await this.polling;
      return await run();
    } finally {
      this.cycling = false;
    }
  }

  /** The control socket's `overrides` command: apply the overrides file now. Answers one line for the CLI. */
  async overridesChanged(): Promise<string> {
    const r = await this.applyNow('local overrides changed');
    return r;
  }

  private async applyNow(why: string): Promise<string> {
    if (this.stopped) return 'error the daemon is stopping';
    return this.o.writer.run(async () => {
      const parts = this.o.parts();
      const now = Math.floor(Date.now() / 1000);
      try {
        const r = await withLock(parts.config.state_dir, () =>
          applyLocal({ ...parts, logger: this.o.logger, settings: this.o.settings() }, this.currentBase(now), now),
        );
        this.mergedAt = now;
        this.o.logger.info({ applied: r.applied, allowed: r.allowed, added: r.apply?.added ?? 0, removed: r.apply?.removed ?? 0 }, `${why}: applied without a full cycle`);
        return `ok ${r.applied} entries applied`;
      } catch (err) {
        // A manual `sync` holds the lock: it reads the overrides file itself before it applies.
        if (err instanceof LockHeldError) return `ok a sync in progress (${err.who}) applies it`;
        this.o.logger.error({ code: (err as WcfError).code }, `${why}: not applied: ${errorMessage(err)}`);
        throw err;
      } finally {
        this.armExpiry();
      }
    });
  }

  private currentBase(now: number): SelectedEntry[] {
    if (this.base) return this.base.toEntries();
    const { state, plugin } = this.o.parts();
    const base = baseFromApplied(state.loadApplied(plugin.name), now);
    this.base = SelectedColumns.of(base);
    return base;
  }

  /** Re-apply when the next local allow ends, so what it held out is blocked again at once. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    if (this.stopped) return;
    const now = Date.now() / 1000;
    let next: number | undefined;
    try {
      for (const o of loadOverrides(this.o.parts().config.state_dir)) {
        if (o.action === 'allow' && o.expiresAt !== null && o.expiresAt > this.mergedAt && (next === undefined || o.expiresAt < next)) next = o.expiresAt;
      }
    } catch {
      return; // an unusable file fails the next cycle, which logs it
    }
    if (next === undefined) return;
    // Already past (it ended during the last apply): at once.
    this.expiryTimer = setTimeout(() => void this.applyNow('a local allow ended').catch(() => undefined), Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil((next - now) * 1000)) + 50));
    this.expiryTimer.unref();
  }

  private schedulePoll(): void {
    const seconds = this.o.parts().config.decision_poll_seconds;
    if (this.stopped || seconds <= 0) return;
    // The first poll at a random point of the interval: a fleet started together would
    // otherwise poll in the same second every interval, for as long as it runs.
    const ms = this.firstPoll ? seconds * 1000 * (0.05 + 0.95 * (this.o.random ?? Math.random)()) : seconds * 1000;
    this.firstPoll = false;
    this.pollTimer = setTimeout(() => void this.pollOnce().finally(() => this.schedulePoll()), ms);
    this.pollTimer.unref();
  }

  /** One poll; skipped while a cycle or another poll runs, or with running disabled: the cycle pulls the decisions itself. */
  async pollOnce(): Promise<void> {
    if (this.stopped || this.polling || this.cycling || !this.o.settings().running) return;
    this.polling = this.pollNow().finally(() => (this.polling = undefined));
    await this.polling;
  }

  private async pollNow(): Promise<void> {
    const parts = this.o.parts();
    const now = Math.floor(Date.now() / 1000);
    try {
      // The pull outside the writer, the apply through it (repairs and overrides never wait for the network).
      const r = await withLock(parts.config.state_dir, () =>
        pollDecisions({ ...parts, logger: this.o.logger, settings: this.o.settings() }, () => this.currentBase(now), now, this.serverTs, (job) =>
          this.o.writer.run(async () => {
            const next = await job();
            if (next) {
              this.base = SelectedColumns.of(next);
              this.mergedAt = now;
            }
            return next;
          }),
        ),
      );
      this.serverTs = r.serverTs;
    } catch (err) {
      // The next poll or cycle tries again; a failing API is the cycle's to report.
      this.o.logger.debug({ code: (err as WcfError).code }, `decision poll failed: ${errorMessage(err)}`);
    }
  }
}
