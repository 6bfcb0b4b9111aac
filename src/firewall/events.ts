import { escapeControls } from '../util/terminal-text.js';
import type { OwnedNames, PluginName } from './plugin.js';

/**
 * The ruleset's change events as the event source prints them, read into
 * transactions (pure: the child process is monitor.ts's). Two sources:
 *
 * - `nft monitor` prints one line per change, every set element included, with
 *   its table, then `# new generation N by process PID (NAME)` per transaction;
 * - `xtables-monitor -e` prints ` EVENT: ...` lines naming the table of chain
 *   and table changes (and of iptables-nft rules), an empty ` EVENT:` for an nft
 *   rule it cannot print, nothing at all for set and element changes, then
 *   `NEWGEN: GENID=N PID=P NAME=COMM`.
 *
 * So with xtables-monitor the events never tell whether a transaction changed
 * the agent's set elements: a transaction that added a chain elsewhere may also
 * have deleted elements of the agent's set in the same batch. Such a
 * transaction is reported with `elements` (only a check of the elements
 * themselves can tell), unless the process that made it cannot write nft sets
 * at all: the iptables family (iptables-nft, ebtables, arptables and their
 * restore tools: kube-proxy, Docker, ufw, fail2ban's iptables actions) writes
 * only the ip/ip6/arp/bridge tables of the xtables layout, never an inet
 * table's sets. The kernel names the process by its command (at most 15
 * characters, e.g. `iptables-restor`).
 */

/** The changes of one transaction by another process that may touch the agent's objects. */
export interface RulesetChange {
  /** The event lines about the agent's objects (at most a few kept: a set refill announces every element). */
  readonly events: string[];
  /** The program that made the change, as the kernel names it (`nft`, `iptables`, `firewalld`...), with its pid. */
  readonly by?: string;
  /** The event source could not tell which table the change touched (it may be the agent's). */
  readonly maybe?: boolean;
  /** The transaction may have changed the elements of the agent's sets, which the object probe cannot see. */
  readonly elements?: boolean;
}

const GENERATION = /^# new generation \d+ by process (\d+) \(([^)]*)\)/;
/** xtables-monitor's end of a transaction. */
const XT_GENERATION = /^NEWGEN: GENID=\d+ PID=(\d+) NAME=(.*)$/;
/** xtables-monitor's event lines: ` EVENT: ...`. */
const XT_EVENT = /^ ?EVENT: ?(.*)$/;
/** Lines kept per transaction for the log. */
const KEPT_EVENTS = 5;
/** Commands of the iptables family, which cannot write an inet table's sets (see above). */
const XTABLES_FAMILY = /^(ip6?tables|ebtables|arptables|xtables)(-|$)/;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Which `nft monitor` lines concern the agent: for nftables its own table; for the
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

/** Whether an xtables-monitor event line is about the agent's nft table, clearly about another one, or cannot be placed. */
export function xtablesEventPlace(line: string, table: string): 'ours' | 'other' | 'unknown' {
  const body = line.trim();
  if (body === '') return 'unknown'; // an nft rule it cannot print: no table named
  if (new RegExp(`(^|\\s)inet ${escapeRegExp(table)}(\\s|$)`).test(body) || new RegExp(`table ${escapeRegExp(table)} inet(\\s|$)`).test(body)) return 'ours';
  return 'other';
}

/** Whether a process the kernel names `command` may have written an nft set (anything but the iptables family). */
export function maySetElements(command: string): boolean {
  return !XTABLES_FAMILY.test(command.trim());
}

export interface TransactionReaderOptions {
  readonly plugin: PluginName;
  readonly names: OwnedNames;
  /** The lines come from xtables-monitor (else from `nft monitor`). */
  readonly xtables: boolean;
  /** The agent's own commands, by pid: their transactions are not reported. */
  readonly isOwn: (pid: number) => boolean;
  readonly onChange: (change: RulesetChange) => void;
}

/** Reads an event source's lines one at a time and reports each transaction by another process that may touch the agent's objects. */
export class TransactionReader {
  private readonly relevant: (line: string) => boolean;
  private pending: string[] = [];
  private pendingCount = 0;

  constructor(private readonly opts: TransactionReaderOptions) {
    this.relevant = relevantEvent(opts.plugin, opts.names);
  }

  /** Lines of the transaction being read (for the `nft monitor` source's flush timer). */
  get waiting(): number {
    return this.pendingCount;
  }

  line(line: string): void {
    const gen = (this.opts.xtables ? XT_GENERATION : GENERATION).exec(line);
    if (gen) {
      this.endTransaction(Number(gen[1]), gen[2]!);
      return;
    }
    if (this.opts.xtables) {
      const ev = XT_EVENT.exec(line);
      // Only "ours" is kept: "other" and "unknown" say nothing about the agent's elements either way.
      if (!ev || xtablesEventPlace(ev[1]!, this.opts.names.tableName) !== 'ours') return;
      line = ev[1]!;
    } else if (!this.relevant(line)) return;
    this.pendingCount++;
    if (this.pending.length < KEPT_EVENTS) this.pending.push(escapeControls(line.slice(0, 200)));
  }

  /** A transaction's events taken as complete without a generation line (an older nft): reported as by an unknown process. */
  flushPending(): void {
    if (this.pendingCount > 0) this.report({ events: this.takeEvents(), elements: this.opts.plugin === 'nftables' });
  }

  private endTransaction(pid: number, command: string): void {
    // The agent's own commands: nothing to look at.
    if (this.opts.isOwn(pid)) {
      this.takeEvents();
      return;
    }
    // Another tool's program name is data: escaped before it reaches any log.
    const by = `${escapeControls(command.trim())} (pid ${pid})`;
    const sets = this.opts.plugin === 'nftables' && maySetElements(command);
    if (this.pendingCount > 0) {
      this.report({ events: this.takeEvents(), by, elements: sets });
      return;
    }
    // xtables-monitor prints nothing for set and element changes: any transaction by a process
    // that can write nft sets may have changed the agent's, whatever else it touched.
    if (this.opts.xtables && sets) this.report({ events: [], by, maybe: true, elements: true });
  }

  private takeEvents(): string[] {
    const events = this.pendingCount > this.pending.length ? [...this.pending, `… ${this.pendingCount - this.pending.length} more`] : this.pending;
    this.pending = [];
    this.pendingCount = 0;
    return events;
  }

  private report(change: RulesetChange): void {
    this.opts.onChange(change);
  }
}
