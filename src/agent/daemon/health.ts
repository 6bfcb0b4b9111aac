import { errorMessage } from '../../errors.js';
import type { FirewallPlugin, OwnedObject } from '../../firewall/index.js';
import { SharedRead } from '../../util/shared-read.js';
import type { TruthView } from './kernel-truth.js';

/** One answer of a probe: 200 when ok, 503 otherwise, with a one-line reason. */
export interface ProbeAnswer {
  ok: boolean;
  reason: string;
}

/** What the readiness check reads from the daemon, each time it is asked. */
export interface HealthView {
  /** The plugin in force (undefined before the daemon has opened it). */
  plugin: FirewallPlugin | undefined;
  /** The server's `running` setting in force. */
  running: boolean;
  /** Entries of the last set this process applied that are still due (undefined: none applied yet). */
  applied: number | undefined;
  /** config.json's cycle_deadline_seconds. */
  cycleDeadlineSeconds: number;
  /** What the watcher last found in the kernel (and each apply wrote). */
  truth: TruthView;
  /** The watcher looks at the kernel (else readiness reads the objects itself, shared and spaced out). */
  watched: boolean;
}

export interface HealthOptions {
  view: () => HealthView;
  /** Milliseconds in a minute (60000; tests shorten it, and with it every allowance below). */
  minuteMs: number;
  now?: () => number;
}

/**
 * Liveness and readiness of `wcf-agent run`, for /healthz and /readyz.
 *
 * Alive: the daemon's loop turns. It is wedged when a cycle has been running longer
 * than its API deadline plus ten minutes for the apply and the report (a firewall tool
 * that never returns), or when the next cycle was due more than a minute ago and has
 * not started (its timer lost). An event loop blocked outright answers no request at
 * all, which a probe counts as a failure too.
 *
 * Ready: the firewall enforces the last set this process applied (restored at start or
 * applied by a cycle), as far as the daemon knows: the last apply succeeded and the
 * watcher's last look (the objects, and the entries themselves when something may have
 * changed them) found nothing missing. Answered from what the watcher keeps, never by a
 * kernel read per request: a probe flood costs no nft run. Without a watcher
 * (watch_interval_seconds 0) the objects are read, one read shared by every request and
 * not repeated sooner than OBJECTS_MIN_AGE_MS.
 */
/** Without a watcher, readiness reads the objects at most once a second (and never more often than the read takes). */
const OBJECTS_MIN_AGE_MS = 1000;

export class DaemonHealth {
  private busySince: number | undefined;
  private dueAt: number | undefined;
  private readonly now: () => number;
  private objectsRead: { plugin: FirewallPlugin; read: SharedRead<OwnedObject[]> } | undefined;

  constructor(private readonly opts: HealthOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** The plugin's objects through one shared, spaced-out read (a new plugin after a reload starts a new one). */
  private objects(plugin: FirewallPlugin): Promise<OwnedObject[]> {
    if (this.objectsRead?.plugin !== plugin) this.objectsRead = { plugin, read: new SharedRead(() => plugin.objects(), (ms) => Math.max(OBJECTS_MIN_AGE_MS, ms), this.now) };
    return this.objectsRead.read.get();
  }

  /** Runs one turn of the loop (a cycle), marked busy while it runs. */
  async during<T>(fn: () => Promise<T>): Promise<T> {
    this.busySince = this.now();
    this.dueAt = undefined;
    try {
      return await fn();
    } finally {
      this.busySince = undefined;
    }
  }

  /** The next turn is due at `atMs` (epoch milliseconds). */
  scheduled(atMs: number): void {
    this.dueAt = atMs;
  }

  /** Stopping: no next turn is expected any more. */
  stopped(): void {
    this.dueAt = undefined;
  }

  /** What the watcher last found in the kernel (for the metrics). */
  truth(): TruthView {
    return this.opts.view().truth;
  }

  live(): ProbeAnswer {
    const now = this.now();
    const minute = this.opts.minuteMs;
    if (this.busySince !== undefined) {
      const limitMs = this.opts.view().cycleDeadlineSeconds * 1000 + 10 * minute;
      const busyMs = now - this.busySince;
      if (busyMs > limitMs) return { ok: false, reason: `wedged: a cycle has been running for ${seconds(busyMs)} (limit ${seconds(limitMs)})` };
      return { ok: true, reason: `alive: a cycle is running (${seconds(busyMs)})` };
    }
    if (this.dueAt === undefined) return { ok: true, reason: 'alive: starting or stopping' };
    const lateMs = now - this.dueAt;
    // A minute, never less than half of one (tests shorten the minute; timers run late on a busy host).
    if (lateMs > Math.max(minute, 30_000)) return { ok: false, reason: `wedged: the next cycle was due ${seconds(lateMs)} ago and has not started` };
    return { ok: true, reason: `alive: next cycle in ${seconds(Math.max(0, -lateMs))}` };
  }

  async ready(): Promise<ProbeAnswer> {
    const v = this.opts.view();
    if (!v.plugin) return { ok: false, reason: 'not ready: starting' };
    if (v.plugin.name === 'dry-run') return { ok: false, reason: 'not ready: dry run, nothing enforced' };
    if (!v.running) return { ok: false, reason: 'not ready: running is disabled in the server configuration' };
    if (v.applied === undefined) return { ok: false, reason: 'not ready: no set applied yet (nothing to restore, first sync pending)' };
    if (v.truth.state === 'damaged') return { ok: false, reason: `not ready: ${v.truth.reason}; repairing` };
    // Nothing is repaired there: the agent never takes over what is not its own.
    if (v.truth.state === 'foreign') return { ok: false, reason: `not ready: ${v.truth.reason}` };
    if (!v.watched) {
      let objects;
      try {
        objects = await this.objects(v.plugin);
      } catch (err) {
        return { ok: false, reason: `not ready: cannot read the firewall: ${oneLine(errorMessage(err))}` };
      }
      const wrong = objects.filter((o) => o.state !== 'present');
      if (wrong.length) return { ok: false, reason: `not ready: ${wrong.map((o) => `${o.what} ${o.state}`).join(', ')}` };
    }
    const checked = v.truth.confirmedAt !== undefined ? `; last look ${seconds(Math.max(0, this.now() - v.truth.confirmedAt))} ago: ${v.truth.reason}` : '';
    return { ok: true, reason: `ready: ${v.plugin.name} enforcing the last applied set (${v.applied} entries)${checked}` };
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ').trim();
