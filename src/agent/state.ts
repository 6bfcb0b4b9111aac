import { existsSync, mkdirSync, readFileSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import Conf from 'conf';
import { StateError } from '../errors.js';
import type { Logger } from '../log.js';
import { IndicatorMap } from '../feed/indicator.js';
import { toCidr } from '../net/ipv4.js';
import type { Settings, SettingSources } from '../config/server.js';
import type { Reason, SkipReason } from '../policy/select.js';
import { writeFileAtomic } from './atomic-file.js';

/** Outcome of the last cycle, shown by `status` and reported to the API. */
export interface CycleRecord {
  ts: number;
  ok: boolean;
  code: number;
  errorCode?: string | undefined;
  message?: string | undefined;
  durationMs: number;
  plugin: string;
  applied: number;
  /** `url` is absent in records written before the URL feed existed. */
  byReason: Record<Exclude<Reason, 'url'>, number> & { url?: number };
  skipped: Record<SkipReason, number>;
  fullPull: boolean;
  running: boolean;
}

/** Small persisted state (conf, `cwd` = state dir). */
export interface SmallState {
  cursor?: number;
  lastFullPullAt?: number;
  settings?: Settings;
  sources?: SettingSources;
  lastCycle?: CycleRecord;
  lastSuccessAt?: number;
  nextSyncAt?: number;
  /** Shrink guard: size of a held-back shrinking pull, to compare with the next one. */
  pendingShrink?: { at: number; size: number };
}

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
 * and ~150 MB of short-lived objects (version 1, `feed-cache.json`, is no
 * longer read: without a cache the next pull is simply a full one).
 */
const FEED_CACHE_FILE = 'feed-cache.bin';
const LEGACY_FEED_CACHE_FILE = 'feed-cache.json';
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

/**
 * Everything the agent keeps between runs, in `state_dir`. Writes are atomic;
 * a file that cannot be parsed is renamed aside with a warning (never a crash loop).
 */
export class StateStore {
  readonly dir: string;
  private readonly logger: Logger;
  private conf: Conf<SmallState>;

  constructor(dir: string, logger: Logger) {
    this.dir = dir;
    this.logger = logger;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new StateError(`cannot create state_dir ${dir}: ${(err as Error).message}`, { cause: err });
    }
    this.conf = this.openConf();
  }

  private openConf(): Conf<SmallState> {
    const open = () => new Conf<SmallState>({ cwd: this.dir, configName: 'state', configFileMode: 0o600, clearInvalidConfig: false });
    try {
      const c = open();
      void c.store; // read now so a corrupt file is found here, not mid-cycle
      return c;
    } catch (err) {
      const path = join(this.dir, 'state.json');
      if (!existsSync(path)) throw new StateError(`cannot open state in ${this.dir}: ${(err as Error).message}`, { cause: err });
      this.setAside(path, err);
      return open();
    }
  }

  private setAside(path: string, err: unknown): void {
    const aside = `${path}.corrupt-${Date.now()}`;
    this.logger.warn({ file: path, aside }, `state file unreadable (${(err as Error).message}); set aside, starting fresh`);
    try {
      renameSync(path, aside);
    } catch (e) {
      throw new StateError(`cannot set aside corrupt state file ${path}: ${(e as Error).message}`, { cause: e });
    }
  }

  get small(): SmallState {
    try {
      return this.conf.store;
    } catch (err) {
      this.conf = this.openConf();
      return this.conf.store;
    }
  }

  update(patch: Partial<SmallState>): void {
    try {
      this.conf.store = { ...this.small, ...patch };
    } catch (err) {
      throw new StateError(`cannot write state in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
  }

  private readJson(name: string): unknown {
    const path = join(this.dir, name);
    if (!existsSync(path)) return undefined;
    try {
      return JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      this.setAside(path, err);
      return undefined;
    }
  }

  private writeJson(name: string, value: unknown): void {
    try {
      writeFileAtomic(join(this.dir, name), JSON.stringify(value));
    } catch (err) {
      throw new StateError(`cannot write ${name} in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Cached score-based feed (for incremental pulls); see FEED_CACHE_FILE for the format. */
  loadFeedCache(): IndicatorMap | undefined {
    const path = join(this.dir, FEED_CACHE_FILE);
    if (!existsSync(path)) return undefined;
    let buf: Uint8Array;
    try {
      buf = readFileSync(path);
    } catch (err) {
      this.setAside(path, err);
      return undefined;
    }
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
    try {
      unlinkSync(join(this.dir, LEGACY_FEED_CACHE_FILE)); // a previous version's cache: superseded, can be large
    } catch {
      /* usually absent */
    }
  }

  /** Per plugin, so a dry run never stands in for what the kernel holds. */
  loadApplied(plugin: string): AppliedSet | undefined {
    const raw = this.readJson(`applied-${plugin}.json`) as AppliedSet | undefined;
    if (raw === undefined) return undefined;
    if (!Array.isArray(raw.entries) || typeof raw.ts !== 'number') {
      this.logger.warn(`applied-${plugin}.json has an unknown format; ignored`);
      return undefined;
    }
    const entries = raw.entries.filter(
      (e) => e && typeof e.cidr === 'string' && toCidr(e.cidr) !== undefined && (e.expiresAt === null || typeof e.expiresAt === 'number'),
    );
    return { ts: raw.ts, plugin: String(raw.plugin), entries };
  }

  saveApplied(set: AppliedSet): void {
    this.writeJson(`applied-${set.plugin}.json`, set);
  }
}
