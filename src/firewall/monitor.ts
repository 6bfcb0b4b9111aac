import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { escapeControls } from '../util/terminal-text.js';
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
 */

/** The changes of one transaction that touch the agent's objects. */
export interface RulesetChange {
  /** The event lines (at most a few kept: a set refill announces every element). */
  readonly events: string[];
  /** The program that made the change, as the kernel names it (`nft`, `iptables`, `firewalld`...). */
  readonly by?: string;
}

export interface MonitorOptions {
  readonly plugin: PluginName;
  readonly names: OwnedNames;
  readonly netns?: string | undefined;
  readonly logger: Logger;
  readonly onChange: (change: RulesetChange) => void;
  /** Told whether the event source is running (true once spawned, false when it died or cannot start). */
  readonly onState?: (up: boolean) => void;
}

const GENERATION = /^# new generation \d+ by process (\d+) \(([^)]*)\)/;
/** Lines kept per transaction for the log. */
const KEPT_EVENTS = 5;
/** Without a generation line (older nft), a transaction's events are taken as complete after this long. */
const FLUSH_AFTER_MS = 200;
const RESTART_MIN_MS = 1000;
const RESTART_MAX_MS = 60_000;
/** A child that ran this long before dying was healthy: the back-off starts again from the minimum. */
const HEALTHY_AFTER_MS = 60_000;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Which event lines concern the agent: for nftables its own table; for the
 * iptables-based backends (with iptables-nft) the `ip filter` table that holds
 * its chain and hooks. Other tables are ignored and cause no work.
 */
export function relevantEvent(plugin: PluginName, names: OwnedNames): (line: string) => boolean {
  const re =
    plugin === 'nftables'
      ? new RegExp(`^\\S+ \\S+ inet ${escapeRegExp(names.tableName)}(\\s|$)`)
      : /^\S+ \S+ ip filter(\s|$)/;
  return (line) => re.test(line);
}

/** Runs `nft monitor` (inside `netns` when configured) until stop(). */
export class NftMonitor {
  private child: ChildProcess | undefined;
  private stopped = false;
  private restartMs = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  private pending: string[] = [];
  private pendingCount = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly relevant: (line: string) => boolean;

  constructor(private readonly opts: MonitorOptions) {
    this.relevant = relevantEvent(opts.plugin, opts.names);
  }

  start(): void {
    this.stopped = false;
    this.spawn();
  }

  private spawn(): void {
    const argv = [...netnsPrefix(this.opts.netns), 'nft', 'monitor'];
    const started = Date.now();
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    this.child = child;
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      if (stderr.length < 1000) stderr += d.toString('utf8');
    });
    createInterface({ input: child.stdout! }).on('line', (line) => this.onLine(line));
    if (child.pid !== undefined) this.opts.onState?.(true);
    let spawnError: NodeJS.ErrnoException | undefined;
    child.on('error', (err: NodeJS.ErrnoException) => {
      spawnError = err;
    });
    // 'close': the process has ended and its pipes are drained (also after a failed spawn).
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.child === child) this.child = undefined;
      if (this.stopped) return;
      this.opts.onState?.(false);
      if (spawnError?.code === 'ENOENT') {
        // No nft on this host (legacy iptables only): the periodic checks are the only source.
        this.opts.logger.info('nft not found: firewall changes are noticed by the periodic checks only');
        return;
      }
      if (Date.now() - started >= HEALTHY_AFTER_MS) this.restartMs = RESTART_MIN_MS;
      const why = spawnError ? spawnError.message : `exit code ${String(code)}${signal ? ` (${signal})` : ''}`;
      this.opts.logger.warn(
        { restartInMs: this.restartMs, stderr: stderr.trim().slice(0, 300) || undefined },
        `nft monitor stopped (${why}); restarting it, periodic checks cover the gap`,
      );
      this.restartTimer = setTimeout(() => this.spawn(), this.restartMs);
      this.restartMs = Math.min(RESTART_MAX_MS, this.restartMs * 2);
    });
  }

  private onLine(line: string): void {
    const gen = GENERATION.exec(line);
    if (gen) {
      // Another tool's rule text and program name are data: escaped before they reach any log.
      this.flush(`${escapeControls(gen[2]!)} (pid ${gen[1]})`);
      return;
    }
    if (!this.relevant(line)) return;
    this.pendingCount++;
    if (this.pending.length < KEPT_EVENTS) this.pending.push(escapeControls(line.slice(0, 200)));
    this.flushTimer ??= setTimeout(() => this.flush(undefined), FLUSH_AFTER_MS);
  }

  private flush(by: string | undefined): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.pendingCount === 0) return;
    const events = this.pendingCount > this.pending.length ? [...this.pending, `… ${this.pendingCount - this.pending.length} more`] : this.pending;
    this.pending = [];
    this.pendingCount = 0;
    this.opts.onChange(by === undefined ? { events } : { events, by });
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.child?.kill('SIGTERM');
    this.child = undefined;
  }
}
