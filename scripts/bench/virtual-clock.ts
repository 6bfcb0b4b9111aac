/**
 * Virtual time for the fleet benchmark: the global setTimeout/setInterval and Date.now are
 * replaced by a clock that jumps from one timer to the next, so a day of a thousand daemons
 * runs in minutes. Work started by a timer (HTTP calls to the in-process simulator, file I/O)
 * runs in real time while the virtual clock stands still; the clock moves on only once that
 * work has settled: no API call in flight (counted by the agent's API client) and no file
 * or process request pending in the event loop. A cycle thus takes no virtual time, and every
 * call it makes falls in the second it started.
 *
 * Why not a fake-timer library: none is installed (vitest keeps its own inside), node_modules is
 * shared with the other worktrees, and what is needed is a timer queue and a settle check.
 * Node's internal timers (socket timeouts, keep-alive) stay real; so do setImmediate and
 * performance.now (durations).
 */
import { ApiClient } from '../../src/api/client.js';

interface Timer {
  id: number;
  at: number;
  seq: number;
  fn: () => void;
  every: number | undefined;
  live: boolean;
}

/** What a Node Timeout offers that the agent calls (unref/ref/hasRef/refresh). */
class Handle {
  constructor(readonly t: Timer) {}
  unref(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  refresh(): this {
    return this;
  }
  [Symbol.toPrimitive](): number {
    return this.t.id;
  }
}

/** Event-loop resources that do not mean work under way: listeners, idle keep-alive sockets, stdio, real timers. */
const IDLE = new Set(['TCPServerWrap', 'TCPSocketWrap', 'PipeServerWrap', 'PipeWrap', 'TTYWrap', 'Timeout', 'Immediate', 'SignalWrap', 'FSEventWrap', 'StatWatcher']);

export class VirtualClock {
  private now: number;
  private seq = 0;
  private nextId = 1;
  private readonly queue: Timer[] = [];
  private readonly byId = new Map<number, Timer>();
  private inflight = 0;
  /** Undo what install() patched (the client's calls). */
  private readonly restore: (() => void)[] = [];
  private readonly saved = { setTimeout, clearTimeout, setInterval, clearInterval, now: Date.now, hrtime: process.hrtime.bigint };

  constructor(startMs: number) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  install(): void {
    const self = this;
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => self.add(() => fn(...args), ms ?? 0, undefined);
    g.setInterval = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => self.add(() => fn(...args), ms ?? 0, Math.max(1, ms ?? 0));
    g.clearTimeout = g.clearInterval = (h: unknown) => self.clear(h);
    Date.now = () => self.now;
    // The monotonic clock moves with it: the agent compares the two to notice a stepped wall clock.
    const mono0 = this.saved.hrtime();
    const start = this.now;
    process.hrtime.bigint = () => mono0 + BigInt(Math.round((self.now - start) * 1e6));
    // An API call is in flight from the client's request until it holds the whole answer (a gzip
    // answer is still being decoded, in zlib's thread pool, no resource the event loop lists,
    // after its body has closed). Every transport request is made inside this call.
    const proto = ApiClient.prototype as unknown as { once: (...a: unknown[]) => Promise<unknown> };
    const once = proto.once;
    this.restore.push(() => (proto.once = once));
    proto.once = function (this: unknown, ...a: unknown[]) {
      self.inflight++;
      return once.apply(this, a).finally(() => self.inflight--);
    };
  }

  uninstall(): void {
    const g = globalThis as Record<string, unknown>;
    g.setTimeout = this.saved.setTimeout;
    g.clearTimeout = this.saved.clearTimeout;
    g.setInterval = this.saved.setInterval;
    g.clearInterval = this.saved.clearInterval;
    Date.now = this.saved.now;
    process.hrtime.bigint = this.saved.hrtime;
    for (const undo of this.restore.splice(0).reverse()) undo();
  }

  private add(fn: () => void, ms: number, every: number | undefined): Handle {
    const t: Timer = { id: this.nextId++, at: this.now + Math.max(0, Number(ms) || 0), seq: this.seq++, fn, every, live: true };
    this.push(t);
    this.byId.set(t.id, t);
    return new Handle(t);
  }

  private clear(h: unknown): void {
    const t = h instanceof Handle ? h.t : typeof h === 'number' ? this.byId.get(h) : undefined;
    if (!t) return;
    t.live = false;
    this.byId.delete(t.id);
  }

  private push(t: Timer): void {
    const q = this.queue;
    q.push(t);
    let i = q.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(q[i]!, q[p]!)) break;
      [q[i], q[p]] = [q[p]!, q[i]!];
      i = p;
    }
  }

  private pop(): Timer | undefined {
    const q = this.queue;
    const top = q[0];
    const last = q.pop();
    if (q.length && last) {
      q[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < q.length && before(q[l]!, q[m]!)) m = l;
        if (r < q.length && before(q[r]!, q[m]!)) m = r;
        if (m === i) break;
        [q[i], q[m]] = [q[m]!, q[i]!];
        i = m;
      }
    }
    return top;
  }

  /** Real event-loop turns until no API call is in flight and no file or process request is pending. */
  async settle(): Promise<void> {
    let quiet = 0;
    while (quiet < 3) {
      await new Promise<void>((r) => setImmediate(r));
      const kinds = process.getActiveResourcesInfo();
      if (process.env.WCF_BENCH_DEBUG) process.stderr.write(`settle ${this.inflight} ${[...new Set(kinds)].join(',')}\n`);
      const busy = this.inflight > 0 || kinds.some((k) => !IDLE.has(k));
      quiet = busy ? 0 : quiet + 1;
    }
  }

  /** Run every timer due up to `untilMs`, one instant at a time, letting the work each starts settle. */
  async runUntil(untilMs: number): Promise<void> {
    await this.settle();
    for (;;) {
      const head = this.queue[0];
      if (!head || head.at > untilMs) break;
      this.now = Math.max(this.now, head.at);
      // Every timer of this instant, then let what they started settle.
      while (this.queue[0] && this.queue[0].at <= this.now) {
        const t = this.pop()!;
        if (!t.live) continue;
        if (t.every !== undefined) {
          t.at = this.now + t.every;
          t.seq = this.seq++;
          this.push(t);
        } else this.byId.delete(t.id);
        try {
          t.fn();
        } catch (err) {
          process.stderr.write(`virtual timer threw: ${String(err)}\n`);
        }
      }
      await this.settle();
    }
    this.now = Math.max(this.now, untilMs);
  }
}

const before = (a: Timer, b: Timer) => a.at < b.at || (a.at === b.at && a.seq < b.seq);
