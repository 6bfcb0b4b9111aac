import type { Settings, SettingSources } from '../../config/server.js';
import type { LastKnownApi } from '../../host/protected-set.js';
import type { Reason, SkipReason } from '../../policy/types.js';

/** The shapes of `state.json` (the small state), apart from the store that reads and writes it. */

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

/** What the last state report carried (it is bounded: report_max_kb). */
export interface ReportRecord {
  at: number;
  /** Applied entries listed in it. */
  entries: number;
  /** Applied entries at the time. */
  total: number;
  /** Its size in bytes. */
  bytes: number;
  /** Fewer entries than applied. */
  shortened: boolean;
  /** Bytes of a first report the server refused as too large (413), when it did. */
  refused?: number | undefined;
  /** Whether the server stored it. */
  ok: boolean;
}

/** Small persisted state: `state.json` in the state dir. */
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
  /** Most score-feed indicators seen in one cycle (bounds how much a later pull may receive). */
  largestFeed?: number;
  /**
   * The firewall objects the agent created and marked as its own (the markers in the kernel
   * are what ownership is decided on; this is the record for people and `status --json`).
   */
  owned?: { plugin: string; objects: string[]; since: number };
  /** Wall and monotonic clocks at the start of the last cycle, to detect clock steps. */
  clock?: { wall: number; mono: number; boot: string | undefined };
  /** The API server's addresses when they last resolved: protected while resolution fails. */
  apiLastKnown?: LastKnownApi;
  /** Repairs the daemon's watcher made between cycles: how many, the last one's time and what was missing. */
  repairs?: { count: number; lastAt: number; objects: string[] };
  /** The last state report: how many of the applied entries it listed. */
  report?: ReportRecord;
}
