import type { WcfError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { AgentConfig } from '../../config/load.js';
import type { Settings, SettingSources } from '../../config/server.js';
import type { ThreatIntelApi } from '../../api/threat-intel.js';
import type { ApplyResult } from '../../firewall/index.js';
import type { Scoring } from '../../score/decay.js';
import type { Selection, SelectedColumns } from '../../policy/selected-columns.js';
import type { ProtectedSet } from '../../policy/protect.js';
import type { CycleRecord, ReportRecord, StateStore } from '../state/store.js';
import type { PulledFeeds } from './pull-all.js';
import type { PhaseClock, PhaseTimings } from './timings.js';
import type { DnsPlan, DnsStepRecord } from './url-feed-front.js';
import type { CycleFacts } from './history-facts.js';

/**
 * The shapes a sync cycle takes and gives, apart from the code that runs it, so that
 * its steps, the daemon and the read-only views can name them without importing the
 * cycle itself.
 */

export interface CycleDeps {
  config: AgentConfig;
  api: ThreatIntelApi;
  state: StateStore;
  logger: Logger;
  /** Epoch seconds. */
  now?: () => number;
  onProgress?: (what: string, pages: number, items: number) => void;
  /** Skip the shrink guard (an operator's explicit `sync --once --force`). */
  force?: boolean;
  /** Receives the time of each phase (runCycle passes one; optional for computePlan's other callers). */
  clock?: PhaseClock;
  /** Called once the feeds are pulled, before the selection (runCycle: a collection after a large pull). */
  afterPull?: (feeds: PulledFeeds) => void;
  /** Told whether the agent record exists as soon as the agent-record call answers (before the pull, which may still fail). */
  onAgentRecord?: (status: 'present' | 'deleted') => void;
  /** The protected set, when the caller computed it already (runCycle: it also needs it when the pull fails). */
  protectedSet?: Promise<ProtectedSet>;
  /** `explain --refresh`: the selection also says what it decided for the records overlapping this range. */
  explainFor?: { readonly start: number; readonly end: number };
  /**
   * Runs each of the cycle's writes (the kernel, the resolver, and the applied record saved with
   * them), and nothing else: the daemon passes its writer, so its repairs and local overrides get
   * in while the cycle waits on the network. Default: at once (`sync --once` has no writer).
   */
  write?: <T>(job: () => Promise<T>) => Promise<T>;
  /**
   * Told, inside the write that enforces a pulled plan, its settings (in force from this write on:
   * a local apply after it must not re-apply what `running: false` just removed) and, once the
   * kernel holds it, the plan (the daemon's base for local applies) and when the overrides in it were read.
   */
  onSettings?: (settings: Settings) => void;
  onApplied?: (plan: PlanResult, mergedAt: number) => void;
  /**
   * The local overrides are merged by the caller at its apply, not here (runCycle: an allow given
   * while the cycle pulls must be in what it applies); `selection` is then the feeds' alone.
   */
  overridesAtApply?: boolean;
}

export interface PlanResult {
  now: number;
  settings: Settings;
  sources: SettingSources;
  agentRecord: 'present' | 'deleted';
  scoring: Scoring['source'];
  /** What is applied: the selection from the feeds with the local overrides merged in. */
  selection: Selection;
  /** The selection from the feeds alone (local applies between cycles start from it). */
  base: SelectedColumns;
  pulled: Pick<PulledFeeds, 'full' | 'cursor' | 'pages' | 'invalid'> & { feed: number; manual: number; whitelist: number };
  settingProblems: string[];
  /** The URL feed's part (names for the resolver), when `url_feed` is on. */
  dns?: DnsPlan | undefined;
  /** Why an applied entry would leave, from this pull (the change history asks at the write, while the feed is held). */
  leaving?: CycleFacts;
}

export interface CycleOutcome {
  record: CycleRecord;
  plan?: PlanResult;
  /** Settings in force after the cycle: the server's when the pull got them, else the previous ones. */
  settings: Settings;
  apply?: ApplyResult;
  error?: WcfError | Error;
  reported: boolean;
  /** What the last state report listed (bounded: report_max_kb). */
  stateReport?: ReportRecord | undefined;
  /**
   * Milliseconds per phase: config (the agent-record call), pull (feed cache read + pulls + merge), select (decay,
   * selection), cache (feed cache and state writes), apply (shrink guard + firewall), save
   * (applied-<plugin>.json), report; `failed` for the phase that threw.
   */
  timings?: PhaseTimings;
  /** What the DNS step applied (when `url_feed` is on and it ran). */
  dns?: DnsStepRecord | undefined;
}

/** What computing a plan reads of the state (`plan` passes a read-only view that creates nothing). */
export type PlanState = Pick<StateStore, 'small' | 'loadFeedCache'>;
