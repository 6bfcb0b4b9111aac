import type { Left } from '../../../policy/leave-reasons.js';
import type { Reason } from '../../../policy/types.js';
import { fileVersion } from '../applied-count.js';
import type { AppliedList } from '../applied-columns.js';
import type { Cause, HistoryReason } from './codes.js';
import { AppliedSnapshot, columnsOf, type AppliedView } from './diff.js';
import type { ChangeCounts, History } from './journal.js';
import { FLAG_RECORD_KEPT } from './block.js';

/** What a write of the applied set tells the history about itself. */
export interface AppliedChange {
  readonly cause: Cause;
  /** Epoch s of the write (default: the clock). */
  readonly now?: number;
  /** Why an entry left, where the write knows (see policy/leave-reasons.ts). */
  readonly leave?: (start: number, prefix: number, reason: Reason, expiresAt: number | null) => Left;
  /** Every entry that left, left for this (a flush, running turned off, another backend). */
  readonly all?: HistoryReason;
  /** The set the write started from, when the caller has it at hand (else the record is read back). */
  readonly previous?: AppliedView;
  readonly flags?: number;
  /** Write the record only when something changed beyond entries that expired (the restore). */
  readonly onlyIfChanged?: boolean;
}

/**
 * The history's view of the applied records: each write of `applied-<plugin>.json` is
 * compared with what the record held (kept in memory from this process's last write or
 * read, else read back), and the difference appended to the history before the record is
 * replaced, so a crash between the two repeats a change rather than losing one. Every path
 * that writes the kernel ends with such a write, so every path is recorded here.
 */
export class AppliedHistory {
  private last: { path: string; version: string; snapshot: AppliedSnapshot } | undefined;
  /** Plugins whose last recorded change was checked for a flush that kept the record (once per process). */
  private readonly checked = new Set<string>();

  constructor(
    private readonly history: History | undefined,
    /** Whether the dry-run backend's writes are the host's own (plugin `dry-run` in config.json), not a trial next to a real backend. */
    private readonly recordDryRun: boolean,
  ) {}

  /** Whether `plugin`'s writes are recorded (a dry run beside the configured backend is not). */
  private records(plugin: string): History | undefined {
    return plugin === 'dry-run' && !this.recordDryRun ? undefined : this.history;
  }

  /** A note about the whole set of `plugin` (see History.note). */
  note(plugin: string, cause: Cause, ts: number, reason: HistoryReason, text: string): void {
    this.records(plugin)?.note(plugin, cause, ts, reason, text);
  }

  /**
   * The daemon's on_stop flush: every entry of the record at `path` left the kernel, and the
   * record is kept for the next restore (which the history then records as adding them back).
   */
  flushKeepingRecord(plugin: string, path: string, readRecord: () => AppliedView | undefined): void {
    const history = this.records(plugin);
    if (!history) return;
    const prev = this.previous(plugin, path, undefined, readRecord);
    history.addresses(plugin, prev, AppliedSnapshot.empty, {
      cause: 'flush',
      flags: FLAG_RECORD_KEPT,
      ctx: { now: Math.floor(Date.now() / 1000), leave: () => ({ reason: 'flushed', score: null, rank: null }) },
    });
  }

  /**
   * Before the record at `path` becomes `next`: the changes appended. Answers whether the
   * record is to be written (false only for `onlyIfChanged` when nothing but expiries changed).
   */
  beforeWrite(plugin: string, path: string, next: AppliedList, change: AppliedChange | undefined, readRecord: () => AppliedView | undefined): boolean {
    const history = this.records(plugin);
    if (!history) return !change?.onlyIfChanged;
    const nextView = columnsOf(next);
    const prev = this.previous(plugin, path, change, readRecord);
    const now = change?.now ?? Math.floor(Date.now() / 1000);
    const all = change?.all ?? 'unknown';
    const counts: ChangeCounts | undefined = history.addresses(plugin, prev, nextView, {
      cause: change?.cause ?? 'cycle',
      flags: change?.flags,
      onlyIfChanged: change?.onlyIfChanged,
      ctx: { now, leave: change?.leave ?? (() => ({ reason: all, score: null, rank: null })) },
    });
    return counts !== undefined;
  }

  /** After the record at `path` was written with `next`: kept for the next comparison. */
  afterWrite(path: string, next: AppliedList): void {
    if (!this.history) return;
    const version = fileVersion(path);
    this.last = version === undefined ? undefined : { path, version, snapshot: AppliedSnapshot.of(next) };
  }

  /** A record this process read whole (the restore): kept, so the next write need not read it again. */
  remember(path: string, columns: AppliedView): void {
    if (!this.history) return;
    const version = fileVersion(path);
    if (version !== undefined) this.last = { path, version, snapshot: AppliedSnapshot.of(columns) };
  }

  private previous(plugin: string, path: string, change: AppliedChange | undefined, readRecord: () => AppliedView | undefined): AppliedView {
    if (!this.checked.has(plugin)) {
      this.checked.add(plugin);
      // The daemon's on_stop flush emptied the kernel and kept the record for the restore.
      if (this.history!.lastFlushKeptRecord(plugin)) return AppliedSnapshot.empty;
    }
    if (change?.previous) return change.previous;
    const last = this.last;
    if (last && last.path === path && last.version === fileVersion(path)) return last.snapshot;
    return readRecord() ?? AppliedSnapshot.empty;
  }
}
