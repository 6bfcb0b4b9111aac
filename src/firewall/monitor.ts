import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { isOwnChild, onPath, ownActivityWithin } from '../exec/children.js';
import { TransactionReader, type RulesetChange } from './events.js';
import { wrapForDeath, wrappedNotFound } from '../exec/run.js';
import { netnsPrefix } from './exec.js';
import type { OwnedNames, PluginName } from './plugin.js';

/**
 * The ruleset's change events, heard through a long-lived `nft monitor` child
 * (the kernel announces every nf_tables change over netlink; `nft` prints one
 * line per change, then `# new generation N by process PID (NAME)` per
 * transaction). Covers nftables and iptables-nft; ipset and iptables-legacy
 * changes are not announced there (the watcher's periodic check covers them).
 * No native addon: the child is read line by line, restarted with back-off if
 * it dies.
 *
 * For the nftables backend the source is `xtables-monitor -e` (iptables
 * package) where installed: nft 1.0.x's `nft monitor` first reads the whole
 * ruleset, every set element included, and keeps it: at a million elements
 * 650 MB to 1.3 GB held for good and one to two minutes deaf after each start.
 * xtables-monitor keeps nothing (2 MB) and prints the same transaction
 * lines with the process behind each, but nothing of set and element changes:
 * how its lines are read is events.ts's. Transactions by the agent's own
 * commands (their process ids, see exec/children.ts) are not reported at all.
 */

export interface MonitorOptions {
  readonly plugin: PluginName;
  readonly names: OwnedNames;
  readonly netns?: string | undefined;
  readonly logger: Logger;
  readonly onChange: (change: RulesetChange) => void;
  /**
   * Told whether the event source is running (true once spawned, false when it died or cannot
   * start); `overflowed`: it died while the agent's own commands ran (see ownActivityWithin).
   */
  readonly onState?: (up: boolean, overflowed?: boolean) => void;
}

/** Without a generation line (older nft), a transaction's events are taken as complete after this long. */
const FLUSH_AFTER_MS = 200;
const RESTART_MIN_MS = 1000;
/** A death this soon after one of the agent's own commands is taken as an overflow on its events. */
const OWN_WRITE_WINDOW_MS = 2000;
const RESTART_MAX_MS = 60_000;
/** How long a pause waits for the child to end before the write goes ahead regardless. */
const PAUSE_WAIT_MS = 1000;
/** A child that ran this long before dying was healthy: the back-off starts again from the minimum. */
const HEALTHY_AFTER_MS = 60_000;

/** The command of the event source for a backend. */
function monitorArgv(plugin: PluginName): { argv: string[]; xtables: boolean } {
  if (plugin === 'nftables' && onPath('xtables-monitor')) {
    // Its output is block-buffered on a pipe: stdbuf makes it line-buffered.
    return { argv: onPath('stdbuf') ? ['stdbuf', '-oL', 'xtables-monitor', '-e'] : ['xtables-monitor', '-e'], xtables: onPath('stdbuf') };
  }
  return { argv: ['nft', 'monitor'], xtables: false };
}

/** This process's running event sources (see withEventsPaused). */
const running = new Set<NftMonitor>();
/** Children ended by a pause: their end is not a failure to report or restart. */
const quieted = new WeakSet<ChildProcess>();

/**
 * Runs the agent's own large write with this process's event sources stopped, then starts
 * them again. The kernel announces every element written to every listener: with one
 * listening, re-creating a million entries took 11.7 s instead of 8.5 s, and the listener
 * overflowed and died within the first transaction anyway. A change by another process
 * meanwhile is covered as after any restart: the watcher checks the objects once the
 * source runs again, and the write itself re-reads nothing it did not send.
 */
export async function withEventsPaused<T>(write: () => Promise<T>): Promise<T> {
  const paused = [...running];
  await Promise.all(paused.map((m) => m.pause()));
  try {
    return await write();
  } finally {
    for (const m of paused) m.resume();
  }
}

/** Runs `nft monitor` or xtables-monitor (inside `netns` when configured) until stop(). */
export class NftMonitor {
  private child: ChildProcess | undefined;
  private stopped = false;
  private restartMs = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;
  private reader: TransactionReader | undefined;
  private paused = false;
  /** Which program the monitor runs (for the log). */
  source = 'nft monitor';

  constructor(private readonly opts: MonitorOptions) {}

  start(): void {
    this.stopped = false;
    running.add(this);
    this.spawn();
  }

  /** Ends the child for the agent's own write (reported as an overflow on it, which it would have been); resolves once it is gone. */
  async pause(): Promise<void> {
    if (this.stopped || this.paused) return;
    this.paused = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    quieted.add(child);
    this.opts.onState?.(false, true);
    await new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      setTimeout(resolve, PAUSE_WAIT_MS).unref();
      child.kill('SIGTERM');
    });
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    if (!this.stopped) this.spawn();
  }

  private spawn(): void {
    const source = monitorArgv(this.opts.plugin);
    this.source = source.xtables ? 'xtables-monitor' : 'nft monitor';
    // A fresh reader per child: a transaction half read when the last one died is not carried over.
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const reader = new TransactionReader({ plugin: this.opts.plugin, names: this.opts.names, xtables: source.xtables, isOwn: isOwnChild, onChange: this.opts.onChange });
    this.reader = reader;
    // Under the same wrapper as every other tool: it dies with the agent, even on SIGKILL.
    const argv = wrapForDeath([...netnsPrefix(this.opts.netns), ...(source.xtables ? source.argv : ['nft', 'monitor'])]);
    const started = Date.now();
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    } catch (err) {
      // Node throws for some failed starts (ENOMEM) instead of emitting 'error': try again later, as after a death.
      this.opts.logger.warn({ restartInMs: this.restartMs }, `nft monitor could not be started (${(err as Error).message}); restarting it, periodic checks cover the gap`);
      this.opts.onState?.(false);
      this.restartTimer = setTimeout(() => this.spawn(), this.restartMs);
      this.restartMs = Math.min(RESTART_MAX_MS, this.restartMs * 2);
      return;
    }
    this.child = child;
    // Listened to first: a failed start (EMFILE) is an 'error' on the next tick, fatal with no listener;
    // it leaves no pipes, and 'close' follows it (handled below like a death).
    let spawnError: NodeJS.ErrnoException | undefined;
    child.on('error', (err: NodeJS.ErrnoException) => {
      spawnError = err;
    });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 1000) stderr += d.toString('utf8');
    });
    if (child.stdout) createInterface({ input: child.stdout }).on('line', (line) => this.onLine(reader, line));
    if (child.pid !== undefined) this.opts.onState?.(true);
    // 'close': the process has ended and its pipes are drained (also after a failed spawn).
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.child === child) this.child = undefined;
      if (this.stopped || quieted.has(child)) return;
      const ownWrite = ownActivityWithin(OWN_WRITE_WINDOW_MS);
      this.opts.onState?.(false, ownWrite);
      if (spawnError?.code === 'ENOENT' || wrappedNotFound(code, stderr)) {
        // No nft on this host (legacy iptables only): the periodic checks are the only source.
        this.opts.logger.info('nft not found: firewall changes are noticed by the periodic checks only');
        return;
      }
      // Overflowed by the agent's own large write (a million element events): nothing is wrong
      // with the source, and a growing back-off would leave it deaf for minutes after each fill.
      if (ownWrite || Date.now() - started >= HEALTHY_AFTER_MS) this.restartMs = RESTART_MIN_MS;
      const why = spawnError ? spawnError.message : `exit code ${String(code)}${signal ? ` (${signal})` : ''}`;
      this.opts.logger[ownWrite ? 'info' : 'warn'](
        { restartInMs: this.restartMs, stderr: stderr.trim().slice(0, 300) || undefined },
        `nft monitor stopped (${why}); restarting it, periodic checks cover the gap`,
      );
      this.restartTimer = setTimeout(() => this.spawn(), this.restartMs);
      if (!ownWrite) this.restartMs = Math.min(RESTART_MAX_MS, this.restartMs * 2);
    });
  }

  private onLine(reader: TransactionReader, line: string): void {
    if (reader !== this.reader) return;
    const before = reader.waiting;
    reader.line(line);
    // `nft monitor` of an older nft prints no generation line: events are taken as one
    // transaction once they stop coming for a moment.
    if (reader.waiting === 0) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
    } else if (before === 0) {
      this.flushTimer = setTimeout(() => {
        this.flushTimer = undefined;
        reader.flushPending();
      }, FLUSH_AFTER_MS);
    }
  }

  stop(): void {
    this.stopped = true;
    running.delete(this);
    clearTimeout(this.restartTimer);
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }
}
