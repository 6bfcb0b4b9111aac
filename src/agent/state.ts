import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import Conf from 'conf';
import { StateError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseCidr } from '../net/ipv4.js';
import { IndicatorMap } from '../feed/indicator.js';
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
  byReason: Record<Reason, number>;
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

const FEED_CACHE_VERSION = 1;

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

  /** Cached score-based feed (for incremental pulls), compact: [cidr, ts, score] rows. */
  loadFeedCache(): IndicatorMap | undefined {
    const raw = this.readJson('feed-cache.json') as { version?: unknown; rows?: unknown } | undefined;
    if (raw === undefined) return undefined;
    if (raw.version !== FEED_CACHE_VERSION || !Array.isArray(raw.rows)) {
      this.logger.warn('feed cache has an unknown format; a full pull will rebuild it');
      return undefined;
    }
    const map = new IndicatorMap();
    for (const row of raw.rows as unknown[]) {
      if (!Array.isArray(row) || typeof row[0] !== 'string' || typeof row[1] !== 'number' || typeof row[2] !== 'number') continue;
      const r = parseCidr(row[0]);
      if (r.ok) map.upsert({ cidr: r.cidr, ts: row[1], score: row[2] });
    }
    return map;
  }

  saveFeedCache(map: IndicatorMap): void {
    const rows: [string, number, number][] = [];
    for (const ind of map.values()) rows.push([ind.cidr.text, ind.ts, ind.score]);
    this.writeJson('feed-cache.json', { version: FEED_CACHE_VERSION, rows });
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
      (e) => e && typeof e.cidr === 'string' && parseCidr(e.cidr).ok && (e.expiresAt === null || typeof e.expiresAt === 'number'),
    );
    return { ts: raw.ts, plugin: String(raw.plugin), entries };
  }

  saveApplied(set: AppliedSet): void {
    this.writeJson(`applied-${set.plugin}.json`, set);
  }
}
