import { HIT_TOTALS_FILE, parseHitTotals, type HitTotals } from './hit-totals.js';
import { mkdirSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { releaseArray } from '../../util/release.js';
import { IndicatorMap } from '../../feed/indicator.js';
import type { Reason } from '../../policy/types.js';
import { appliedRecordShape, decodeAppliedColumns, decodeAppliedRecord, encodeAppliedRecord, usableAppliedEntry, type AppliedRecordColumns } from './applied-record.js';
import { AppliedColumns } from './applied-columns.js';
import { AppliedCounts, fileVersion } from './applied-count.js';
import { writeFileAtomic } from '../../util/atomic-file.js';
import { readStateFile, UnsafeStateFile } from '../../util/untrusted-file.js';
import { DEFAULT_HISTORY_MAX_MB } from '../../config/schema.js';
import { History, MIB } from './history/journal.js';
import { AppliedHistory, type AppliedChange } from './history/applied-history.js';
import type { Cause, HistoryReason } from './history/codes.js';
import type { SmallState } from './small-state.js';
export type { CycleRecord, ReportRecord, SmallState } from './small-state.js';

/** The last set applied successfully: re-applied at start-up before any network call. */
export interface AppliedSet {
  ts: number;
  plugin: string;
  entries: { cidr: string; reason: Reason; expiresAt: number | null }[];
}

/**
 * The cached score-based feed, binary: a header (magic, version, count, 0 as
 * u32) then the columns ts f64[count], score f64[count], network address
 * u32[count], prefix u8[count], in host byte order (the file never leaves the
 * machine). 21 bytes per indicator, read straight into typed arrays: a million
 * indicators load in tens of milliseconds, where JSON rows took about a second
 * and ~150 MB of short-lived objects.
 */
const FEED_CACHE_FILE = 'feed-cache.bin';
const SMALL_STATE_FILE = 'state.json';
/** JSON state files are small (the applied set at 2 million entries is about 150 MB); anything larger is not ours. */
const MAX_JSON_BYTES = 512 * 1024 * 1024;
const FEED_CACHE_MAGIC = 0x43464357; // "WCFC"
const FEED_CACHE_VERSION = 2;
const FEED_CACHE_HEADER = 16;
const FEED_CACHE_ROW = 8 + 8 + 4 + 1;

interface FeedCacheColumns {
  header: Uint32Array;
  ts: Float64Array;
  score: Float64Array;
  start: Uint32Array;
  prefix: Uint8Array;
}

/** Views of the cache file's sections over `buf` (8-byte aligned: see the callers). */
function feedCacheColumns(buf: Uint8Array, count: number): FeedCacheColumns {
  const b = buf.buffer;
  const o = buf.byteOffset;
  return {
    header: new Uint32Array(b, o, 4),
    ts: new Float64Array(b, o + FEED_CACHE_HEADER, count),
    score: new Float64Array(b, o + FEED_CACHE_HEADER + 8 * count, count),
    start: new Uint32Array(b, o + FEED_CACHE_HEADER + 16 * count, count),
    prefix: new Uint8Array(b, o + FEED_CACHE_HEADER + 20 * count, count),
  };
}

function isChunks(value: unknown): value is Generator<Buffer> {
  return typeof value === 'object' && value !== null && typeof (value as Generator).next === 'function';
}

/**
 * Everything the agent keeps between runs, in `state_dir`. Writes are atomic;
 * a file that cannot be parsed is renamed aside with a warning (never a crash loop).
 */
export class StateStore {
  readonly dir: string;
  private readonly logger: Logger;
  private smallState: SmallState;
  /** Entries of each applied record as last read or written here, with the file version they belong to. */
  private readonly appliedCounts = new AppliedCounts();
  /** The change history (history-*.bin): every write of an applied record is recorded there first. */
  readonly history: History;
  private readonly appliedHistory: AppliedHistory;

  /** `history`: history_max_mb, and whether the dry-run backend is the configured one (its writes are then the host's). */
  constructor(dir: string, logger: Logger, history: { maxMb?: number; dryRun?: boolean } = {}) {
    this.dir = dir;
    this.logger = logger;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StateError(`cannot create state_dir ${dir}: ${(err as Error).message}`, { cause: err });
    }
    this.history = new History(dir, logger, Math.floor((history.maxMb ?? DEFAULT_HISTORY_MAX_MB) * MIB));
    this.appliedHistory = new AppliedHistory(this.history, history.dryRun ?? true);
    // Read now, so a corrupt file is found here and not mid-cycle.
    this.smallState = this.readSmall();
  }

  private readSmall(): SmallState {
    const raw = this.readJson(SMALL_STATE_FILE);
    return raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as SmallState) : {};
  }

  /**
   * Re-read state.json: a long-lived process (the daemon) calls this once it holds the lock,
   * since a manual `sync --once` may have written the file since (the copy in memory is the
   * file's content only while this process holds the lock).
   */
  refresh(): void {
    this.smallState = this.readSmall();
  }

  /**
   * Moves an unusable file aside (a symlink or FIFO is renamed itself, never followed).
   * `why` never quotes the file's content: it may be anything, a secret included.
   */
  private setAside(path: string, why: string): void {
    const aside = `${path}.corrupt-${Date.now()}`;
    this.logger.warn({ file: path, aside }, `state file unreadable: ${why}; set aside, starting fresh`);
    try {
      renameSync(path, aside);
    } catch (e) {
      throw new StateError(`cannot set aside corrupt state file ${path}: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Reads a state file, setting aside what is not a readable regular file. */
  private readFile(name: string, maxBytes?: number): Buffer | undefined {
    const path = join(this.dir, name);
    try {
      return readStateFile(path, maxBytes);
    } catch (err) {
      this.setAside(path, err instanceof UnsafeStateFile ? err.reason : 'cannot read');
      return undefined;
    }
  }

  get small(): SmallState {
    return this.smallState;
  }

  update(patch: Partial<SmallState>): void {
    const next = { ...this.smallState, ...patch };
    this.writeJson(SMALL_STATE_FILE, next);
    this.smallState = next;
  }

  private readJson(name: string, parse: (buf: Buffer) => unknown = (buf) => JSON.parse(buf.toString('utf8'))): unknown {
    const buf = this.readFile(name, MAX_JSON_BYTES);
    if (buf === undefined) return undefined;
    try {
      return parse(buf);
    } catch {
      // JSON.parse's message quotes the text: not repeated.
      this.setAside(join(this.dir, name), 'not valid JSON');
      return undefined;
    }
  }

  /** `value` as JSON, or the file's content already encoded (written chunk by chunk). */
  private writeJson(name: string, value: unknown): void {
    try {
      writeFileAtomic(join(this.dir, name), isChunks(value) ? value : JSON.stringify(value));
    } catch (err) {
      throw new StateError(`cannot write ${name} in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Cached score-based feed (for incremental pulls); see FEED_CACHE_FILE for the format. */
  loadFeedCache(): IndicatorMap | undefined {
    let buf: Uint8Array | undefined = this.readFile(FEED_CACHE_FILE);
    if (buf === undefined) return undefined;
    if (buf.byteOffset % 8 !== 0) buf = new Uint8Array(buf); // typed-array views need alignment
    const count = buf.length >= FEED_CACHE_HEADER ? new Uint32Array(buf.buffer, buf.byteOffset, 4)[2]! : -1;
    const cols = count >= 0 && buf.length === FEED_CACHE_HEADER + FEED_CACHE_ROW * count ? feedCacheColumns(buf, count) : undefined;
    if (!cols || cols.header[0] !== FEED_CACHE_MAGIC || cols.header[1] !== FEED_CACHE_VERSION) {
      this.logger.warn('feed cache has an unknown format; a full pull will rebuild it');
      return undefined;
    }
    // Room for what the next incremental pull adds, so merging it does not reallocate the columns.
    const map = new IndicatorMap(count + Math.max(1024, Math.ceil(count / 16)));
    for (let i = 0; i < count; i++) {
      const start = cols.start[i]!;
      const prefix = cols.prefix[i]!;
      // Only canonical networks (prefix 0..32, host bits clear), as parsing the text rows once ensured.
      if (prefix > 32 || (prefix < 32 && start % 2 ** (32 - prefix) !== 0)) continue;
      map.upsertParts(start, prefix, cols.ts[i]!, cols.score[i]!);
    }
    releaseArray(buf); // the file's bytes (21 MB at a million), now in the map
    return map;
  }

  saveFeedCache(map: IndicatorMap): void {
    const c = map.columns();
    const header = new Uint32Array([FEED_CACHE_MAGIC, FEED_CACHE_VERSION, map.size, 0]);
    const bytes = (a: Uint32Array | Uint8Array | Float64Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    try {
      writeFileAtomic(join(this.dir, FEED_CACHE_FILE), [bytes(header), bytes(c.tss), bytes(c.scores), bytes(c.starts), bytes(c.prefixes)]);
    } catch (err) {
      throw new StateError(`cannot write ${FEED_CACHE_FILE} in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Per plugin, so a dry run never stands in for what the kernel holds. */
  loadApplied(plugin: string): AppliedSet | undefined {
    const raw = this.appliedRecord(plugin, this.readJson(`applied-${plugin}.json`, decodeAppliedRecord));
    return raw && { ts: raw.ts, plugin: raw.plugin, entries: raw.entries.filter((e) => usableAppliedEntry(e) !== undefined) as AppliedSet['entries'] };
  }

  /** loadApplied as columns, for the restore and the re-assert: a million objects cost a restart ~900 MB. */
  loadAppliedColumns(plugin: string): AppliedRecordColumns | undefined {
    let columns: AppliedColumns | undefined;
    const raw = this.appliedRecord(plugin, this.readJson(`applied-${plugin}.json`, (buf) => {
      const d = decodeAppliedColumns(buf);
      columns = d.columns;
      return d.record;
    }));
    if (!raw || !columns) return undefined;
    this.appliedHistory.remember(join(this.dir, `applied-${plugin}.json`), columns);
    return { ts: raw.ts, plugin: raw.plugin, columns };
  }

  private appliedRecord(plugin: string, raw: unknown): ReturnType<typeof appliedRecordShape> {
    const r = raw === undefined ? undefined : appliedRecordShape(raw);
    if (raw !== undefined && !r) this.logger.warn(`applied-${plugin}.json has an unknown format; ignored`);
    return r;
  }

  /** Whether an applied record is there (not whether it is readable: loadApplied says that). */
  hasApplied(plugin: string): boolean {
    return fileVersion(join(this.dir, `applied-${plugin}.json`)) !== undefined;
  }

  /** How many entries the applied record holds (the shrink guard's count; see AppliedCounts), or undefined when there is none. */
  appliedCount(plugin: string): number | undefined {
    return this.appliedCounts.count(join(this.dir, `applied-${plugin}.json`), () => this.loadApplied(plugin)?.entries.length);
  }

  /** A note in the change history about the whole set of `plugin` (a restore at start-up, a repair). */
  noteHistory(plugin: string, cause: Cause, ts: number, reason: HistoryReason, text: string): void {
    this.appliedHistory.note(plugin, cause, ts, reason, text);
  }

  /** The daemon's on_stop flush, in the change history: the kernel emptied, the record kept for the restore. */
  historyOfStopFlush(plugin: string): void {
    this.appliedHistory.flushKeepingRecord(plugin, join(this.dir, `applied-${plugin}.json`), () => this.loadAppliedColumns(plugin)?.columns);
  }

  /** The running totals of the kernel's hit counters (see hit-totals.ts); empty when none were saved. */
  loadHitTotals(): HitTotals {
    return parseHitTotals(this.readJson(HIT_TOTALS_FILE));
  }

  saveHitTotals(totals: HitTotals): void {
    this.writeJson(HIT_TOTALS_FILE, { v: 1, entries: totals });
  }

  /**
   * Entries as objects (read back, filtered) or as a cycle's columns; `change` says which path
   * wrote them and why entries left, for the change history. False when not written (see AppliedChange.onlyIfChanged).
   */
  saveApplied(set: Omit<AppliedSet, 'entries'> & { entries: readonly AppliedSet['entries'][number][] | AppliedColumns }, change?: AppliedChange): boolean {
    const name = `applied-${set.plugin}.json`;
    const path = join(this.dir, name);
    if (!this.appliedHistory.beforeWrite(set.plugin, path, set.entries, change, () => this.loadAppliedColumns(set.plugin)?.columns)) return false;
    this.appliedCounts.writing(path, set.entries.length, () => this.writeJson(name, encodeAppliedRecord(set.ts, set.plugin, set.entries)));
    this.appliedHistory.afterWrite(path, set.entries);
    return true;
  }
}

/**
 * The small state for a reader that must change nothing (`plan`): state.json parsed if it
 * is there and readable, else empty. Unlike StateStore it creates no directory and sets
 * no unreadable file aside.
 */
export function readSmallState(dir: string): SmallState {
  try {
    // The same safe open as the store (no symlinks, no FIFOs): plan must not hang or read elsewhere.
    const raw = JSON.parse(readStateFile(join(dir, 'state.json'))?.toString('utf8') ?? '{}') as unknown;
    return raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as SmallState) : {};
  } catch {
    return {};
  }
}
