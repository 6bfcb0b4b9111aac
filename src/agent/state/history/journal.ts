import { errorMessage } from '../../../errors.js';
import type { Logger } from '../../../log.js';
import { encodeBlock, FLAG_PARTIAL, FLAG_RECORD_KEPT, type BlockMeta } from './block.js';
import { REASON_CODE, type Cause, type HistoryReason } from './codes.js';
import { diffApplied, type AppliedView, type DiffContext } from './diff.js';
import { EventColumns } from './events.js';
import { eachHistoryFile, HistoryWriter } from './files.js';

export const MIB = 1024 * 1024;

/** Changes of one write, counted for its log line. */
export interface ChangeCounts {
  added: number;
  removed: number;
  updated: number;
  /** `<change>_<reason>` -> count, e.g. removed_whitelisted. */
  byReason: Record<string, number>;
}

/**
 * The change history: every change to what the host enforces, appended as it happens by the
 * path that made it, in state_dir (files.ts, block.ts), within `history_max_mb`. Recording
 * never fails a write of the kernel or the resolver: a history that cannot be written is
 * logged (once per problem) and the apply goes on.
 */
export class History {
  private readonly writer: HistoryWriter;
  private lastProblem: string | undefined;

  constructor(
    readonly dir: string,
    private readonly logger: Logger,
    readonly maxBytes: number,
  ) {
    this.writer = new HistoryWriter(dir, maxBytes);
  }

  /**
   * The changes from `prev` to `next` (applied sets of the firewall backend `plugin`) as one
   * block: the entries whose kernel timeout ran out since the last write (cause `expiry`), then
   * the write's own changes. Undefined (nothing appended) for `onlyIfChanged` when only expiries changed.
   */
  addresses(plugin: string, prev: AppliedView, next: AppliedView, o: { cause: Cause; ctx: DiffContext; flags?: number | undefined; onlyIfChanged?: boolean | undefined }): ChangeCounts | undefined {
    const { events, changes } = diffApplied(prev, next, o.ctx);
    // Expiries alone are left for the next write to record (each at its own time, the same either way).
    if (o.onlyIfChanged && changes === 0) return undefined;
    this.append({ kind: 'addresses', cause: o.cause, ts: o.ctx.now, plugin, flags: o.flags ?? 0 }, events);
    const counts = countChanges([events]);
    this.log('addresses', o.cause, counts);
    return counts;
  }

  /** Names at the resolver (backend `plugin`): `events` as the DNS step found them. */
  names(plugin: string, cause: Cause, ts: number, events: EventColumns): ChangeCounts {
    this.append({ kind: 'names', cause, ts, plugin }, events);
    const counts = countChanges([events]);
    this.log('names', cause, counts);
    return counts;
  }

  /** Something that happened to the whole set (a repair, a restore at start-up), with a line saying what. */
  note(plugin: string, cause: Cause, ts: number, reason: HistoryReason, text: string): void {
    this.append({ kind: 'note', cause, ts, plugin, noteReason: REASON_CODE[reason], note: text });
  }

  /**
   * Whether the last change of `plugin`'s addresses was a flush that kept the applied record
   * (the daemon's on_stop flush): the kernel holds none of the record, and the restore adds it all.
   */
  lastFlushKeptRecord(plugin: string): boolean {
    let kept = false;
    eachHistoryFile(
      this.dir,
      (blocks) => {
        const last = blocks.filter((b) => b.kind === 'addresses' && b.plugin === plugin.slice(0, 8) && b.count > 0).at(-1);
        if (last) kept = (last.flags & FLAG_RECORD_KEPT) !== 0;
        return last !== undefined;
      },
      { newest: true },
    );
    return kept;
  }

  private append(meta: BlockMeta, events?: EventColumns): void {
    if (events && events.length === 0) return;
    try {
      let block = encodeBlock(meta, events);
      if (block.length > this.writer.limit && events) block = this.shrunk(meta, events, block.length);
      this.writer.append(block);
      this.lastProblem = undefined;
    } catch (err) {
      const msg = errorMessage(err);
      if (msg !== this.lastProblem) this.logger.warn({ dir: this.dir }, `change history not written (the firewall and resolver are not affected): ${msg}`);
      this.lastProblem = msg;
    }
  }

  /**
   * A batch too large for the whole history (a flush of a million entries with a small
   * history_max_mb): as many of its changes as fit, marked partial, so the history says it
   * is incomplete there rather than dropping everything older for one batch.
   */
  private shrunk(meta: BlockMeta, events: EventColumns, bytes: number): Buffer {
    let keep = Math.floor((events.length * this.writer.limit * 0.9) / bytes);
    for (;;) {
      const part = new EventColumns(events.kind);
      for (let i = 0; i < keep; i++) part.copyFrom(events, i);
      const block = encodeBlock({ ...meta, flags: (meta.flags ?? 0) | FLAG_PARTIAL }, part);
      if (block.length <= this.writer.limit || keep === 0) return block;
      keep = Math.floor(keep * 0.8);
    }
  }

  private log(kind: 'addresses' | 'names', cause: Cause, c: ChangeCounts): void {
    if (c.added + c.removed + c.updated === 0) return;
    const what = kind === 'addresses' ? 'addresses and networks' : 'names';
    this.logger.info(
      { history: kind, cause, added: c.added, removed: c.removed, updated: c.updated, ...c.byReason },
      `enforced ${what} changed (${cause}): ${c.added} added, ${c.removed} removed, ${c.updated} updated`,
    );
  }
}

function countChanges(batches: readonly EventColumns[]): ChangeCounts {
  const c: ChangeCounts = { added: 0, removed: 0, updated: 0, byReason: {} };
  for (const e of batches) {
    for (let i = 0; i < e.length; i++) {
      const change = e.change(i);
      if (change === 'note') continue;
      c[change]++;
      const key = `${change}_${e.reason(i)}`;
      c.byReason[key] = (c.byReason[key] ?? 0) + 1;
    }
  }
  return c;
}
