import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Logger } from 'pino';
import { escapeControls } from '../util/terminal-text.js';
import { isOwnChild, onPath, ownActivityWithin } from '../exec/children.js';
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
 * lines with the process behind each; it names the table of chain and table
 * changes but not of set, element or nft-rule changes, so a transaction by
 * another process that it cannot place is reported as one that may have
 * touched the agent's objects (`maybe`). Transactions by the agent's own
 * commands (their process ids, see exec/children.ts) are not reported at all.
 */

/** The changes of one transaction that touch the agent's objects. */
export interface RulesetChange {
  /** The event lines (at most a few kept: a set refill announces every element). */
  readonly events: string[];
  /** The program that made the change, as the kernel names it (`nft`, `iptables`, `firewalld`...). */
  readonly by?: string;
  /** The event source could not tell which table the change touched (it may be the agent's). */
  readonly maybe?: boolean;
}

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

const GENERATION = /^# new generation \d+ by process (\d+) \(([^)]*)\)/;
/** xtables-monitor's end of a transaction. */
const XT_GENERATION = /^NEWGEN: GENID=\d+ PID=(\d+) NAME=(.*)$/;
/** xtables-monitor's event lines: ` EVENT: ...`. */
const XT_EVENT = /^ ?EVENT: ?(.*)$/;
/** Lines kept per transaction for the log. */
const KEPT_EVENTS = 5;
/** Without a generation line (older nft), a transaction's events are taken as complete after this long. */
const FLUSH_AFTER_MS = 200;
const RESTART_MIN_MS = 1000;
/** A death this soon after one of the agent's own commands is taken as an overflow on its events. */
const OWN_WRITE_WINDOW_MS = 2000;
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

/** Whether an xtables-monitor event line is about the agent's nft table (`certain`), clearly about something else, or cannot be placed. */
export function xtablesEventPlace(line: string, table: string): 'ours' | 'other' | 'unknown' {
  const body = line.trim();
  if (body === '') return 'unknown'; // an nft rule it cannot print: no table named
  if (new RegExp(`(^|\\s)inet ${escapeRegExp(table)}(\\s|$)`).test(body) || new RegExp(`table ${escapeRegExp(table)} inet(\\s|$)`).test(body)) return 'ours';
  return 'other';
}

/** The command of the event source for a backend. */
function monitorArgv(plugin: PluginName): { argv: string[]; xtables: boolean } {
  if (plugin === 'nftables' && onPath('xtables-monitor')) {
    // Its output is block-buffered on a pipe: stdbuf makes it line-buffered.
    return { argv: onPath('stdbuf') ? ['stdbuf', '-oL', 'xtables-monitor', '-e'] : ['xtables-monitor', '-e'], xtables: onPath('stdbuf') };
  }
  return { argv: ['nft', 'monitor'], xtables: false };
}

/** Runs `nft monitor` or xtables-monitor (inside `netns` when configured) until stop(). */
export class NftMonitor {
  private child: ChildProcess | undefined;
  private stopped = false;
  private restartMs = RESTART_MIN_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  private pending: string[] = [];
  private pendingCount = 0;
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly relevant: (line: string) => boolean;
  private xtables = false;
  /** The current transaction's lines that could not be placed (xtables-monitor). */
  private unknown = 0;
  /** Which program the monitor runs (for the log). */
  source = 'nft monitor';

  constructor(private readonly opts: MonitorOptions) {
    this.relevant = relevantEvent(opts.plugin, opts.names);
  }

  start(): void {
    this.stopped = false;
    this.spawn();
  }

  private spawn(): void {
    const source = monitorArgv(this.opts.plugin);
    this.xtables = source.xtables;
    this.source = source.xtables ? 'xtables-monitor' : 'nft monitor';
    // Under the same wrapper as every other tool: it dies with the agent, even on SIGKILL.
    const argv = wrapForDeath([...netnsPrefix(this.opts.netns), ...(source.xtables ? source.argv : ['nft', 'monitor'])]);
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
      this.opts.onState?.(false, ownActivityWithin(OWN_WRITE_WINDOW_MS));
      if (spawnError?.code === 'ENOENT' || wrappedNotFound(code, stderr)) {
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
    const gen = (this.xtables ? XT_GENERATION : GENERATION).exec(line);
    if (gen) {
      const pid = Number(gen[1]);
      const unknown = this.unknown;
      this.unknown = 0;
      // The agent's own commands: nothing to look at.
      if (isOwnChild(pid)) {
        this.pending = [];
        this.pendingCount = 0;
        return;
      }
      // xtables-monitor prints no line for set and element changes: a transaction by another
      // process that named nothing, or something it could not place, may have touched the sets.
      if (this.xtables && this.pendingCount === 0 && (unknown > 0 || !this.placedAll)) this.maybe = true;
      this.placedAll = false;
      // Another tool's rule text and program name are data: escaped before they reach any log.
      this.flush(`${escapeControls(gen[2]!.trim())} (pid ${gen[1]})`);
      return;
    }
    if (this.xtables) {
      const ev = XT_EVENT.exec(line);
      if (!ev) return;
      const place = xtablesEventPlace(ev[1]!, this.opts.names.tableName);
      if (place === 'other') {
        this.placedAll = true;
        return;
      }
      if (place === 'unknown') {
        this.unknown++;
        return;
      }
      line = ev[1]!;
    } else if (!this.relevant(line)) return;
    this.pendingCount++;
    if (this.pending.length < KEPT_EVENTS) this.pending.push(escapeControls(line.slice(0, 200)));
    this.flushTimer ??= setTimeout(() => this.flush(undefined), FLUSH_AFTER_MS);
  }

  /** Set when the transaction being read had an event placed elsewhere (xtables-monitor). */
  private placedAll = false;
  private maybe = false;

  private flush(by: string | undefined): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const maybe = this.maybe;
    this.maybe = false;
    if (this.pendingCount === 0 && !maybe) return;
    const events = this.pendingCount > this.pending.length ? [...this.pending, `… ${this.pendingCount - this.pending.length} more`] : this.pending;
    this.pending = [];
    this.pendingCount = 0;
    this.opts.onChange({ events, ...(by === undefined ? {} : { by }), ...(maybe ? { maybe: true } : {}) });
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
