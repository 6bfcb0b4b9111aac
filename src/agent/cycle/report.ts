import { hostname } from 'node:os';
import { ApiStatusError, ApiUnreachableError, GuardError, ServerConfigError, type WcfError, errorMessage, reportCodeOf } from '../../errors.js';
import type { StateReportFields } from '../../api/wire.js';
import type { Settings } from '../../config/server.js';
import type { PluginName } from '../../firewall/index.js';
import type { Selection } from '../../policy/selected-columns.js';
import { AGENT_VERSION } from '../../version.js';
import { countByReason, type AppliedList } from '../state/applied-columns.js';
import { capReportList, type CappedList } from './report-cap.js';
import type { CycleDeps } from './types.js';
import type { CycleRecord, ReportRecord, StateStore } from '../state/store.js';

const NO_SKIPS: Selection['skipped'] = { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 };

/** The cycle's record (status, metrics), stored in the state. */
export function recordCycle(c: {
  state: StateStore;
  plugin: PluginName;
  now: number;
  started: number;
  error: WcfError | Error | undefined;
  current: AppliedList;
  skipped: Selection['skipped'] | undefined;
  fullPull: boolean;
  running: boolean;
}): CycleRecord {
  const { error } = c;
  // A server-config problem or a held-back shrink still leaves a protected, consistent host.
  const ok = error === undefined || error instanceof ServerConfigError || error instanceof GuardError;
  const record: CycleRecord = {
    ts: c.now,
    ok,
    code: error ? reportCodeOf(error) : 0,
    errorCode: (error as WcfError | undefined)?.code,
    message: error ? errorMessage(error) : undefined,
    durationMs: Date.now() - c.started,
    plugin: c.plugin,
    applied: c.current.length,
    byReason: countByReason(c.current),
    skipped: c.skipped ?? NO_SKIPS,
    fullPull: c.fullPull,
    running: c.running,
  };
  c.state.update({ lastCycle: record, ...(ok ? { lastSuccessAt: c.now } : {}) });
  return record;
}

/** Send the state report, unless the record is deleted or the agent is stopping. True when the server stored it. */
export async function reportCycle(
  deps: Pick<CycleDeps, 'config' | 'api' | 'logger'> & { state?: StateStore },
  c: { plugin: PluginName; record: CycleRecord; settings: Settings; current: AppliedList; now: number; error: WcfError | Error | undefined; agentRecord: 'present' | 'deleted' | undefined },
): Promise<boolean> {
  const { logger } = deps;
  if (c.agentRecord === 'deleted') {
    logger.info('not reporting: the server has no record for this agent, and the agent does not create one');
    return false;
  }
  if (c.error instanceof ApiUnreachableError && deps.api.client.aborted) {
    logger.info('not reporting: the agent is stopping');
    return false;
  }
  const fields: StateReportFields = {
    agid: deps.config.agid,
    hostanme: hostname(),
    plugin: c.plugin,
    code: c.record.code,
    maximum_rules: c.settings.maximum_rules,
    score_threshold: c.settings.score_threshold,
    sync_time: String(c.settings.sync_time),
    ts: c.now,
    version: AGENT_VERSION,
  };
  try {
    return await sendBounded(deps, fields, c.current, c.error === undefined);
  } catch (err) {
    // After a failed cycle (already logged once) the report failing too is a detail.
    (c.error ? logger.debug : logger.warn).call(logger, { code: (err as WcfError).code }, `state report failed: ${errorMessage(err)}`);
    return false;
  }
}

/** JSON bytes of the report besides its list: the fields, `,"blacklist":[` and `]}`. */
const headBytes = (fields: StateReportFields) => Buffer.byteLength(JSON.stringify(fields)) + 16;
/** A report the server refused as too large (413) is sent once more with at most this share of its bytes. */
const RETRY_SHARE = 1 / 8;

/**
 * The report within report_max_kb (report-cap.ts). A 413 (the server's body limit is smaller)
 * gets one retry with a list an eighth as long: never a loop, and a refused report never fails
 * the cycle. What was sent is kept in the state (status, metrics); a change of that is logged once.
 */
async function sendBounded(deps: Pick<CycleDeps, 'config' | 'api' | 'logger'> & { state?: StateStore }, fields: StateReportFields, current: AppliedList, retry: boolean): Promise<boolean> {
  const head = headBytes(fields);
  const first = capReportList(current, Math.max(0, deps.config.report_max_kb * 1024 - head));
  let sent = first;
  let refused: number | undefined;
  let reported: boolean;
  try {
    reported = await deps.api.report(fields, first.list, { retry });
  } catch (err) {
    if (!(err instanceof ApiStatusError && err.status === 413)) throw err;
    refused = head + first.bytes;
    sent = capReportList(current, Math.floor(first.bytes * RETRY_SHARE));
    try {
      reported = await deps.api.report(fields, sent.list, { retry });
    } catch (again) {
      noteReport(deps, { ...summary(sent, head), refused, ok: false });
      throw again;
    }
  }
  noteReport(deps, { ...summary(sent, head), refused, ok: reported });
  if (!reported) deps.logger.warn('the server has no record for this agent; report not stored');
  return reported;
}

function summary(l: CappedList, head: number): Pick<ReportRecord, 'entries' | 'total' | 'bytes' | 'shortened'> {
  return { entries: l.entries, total: l.total, bytes: head + l.bytes, shortened: l.entries < l.total };
}

/** Keep what the report carried (status --json, metrics); one log line when that changes. */
function noteReport(deps: { config: CycleDeps['config']; logger: CycleDeps['logger']; state?: StateStore }, r: Omit<ReportRecord, 'at'>): void {
  const before = deps.state?.small.report;
  const how = (x: Pick<ReportRecord, 'shortened' | 'refused'> | undefined) => (x === undefined ? 'none' : `${x.shortened}/${x.refused !== undefined}`);
  if (how(before) !== how(r)) {
    if (r.refused !== undefined) {
      deps.logger.warn(
        { refusedBytes: r.refused, entries: r.entries, total: r.total, bytes: r.bytes, stored: r.ok },
        `the server refused the state report as too large (413, ${r.refused} bytes); sent ${r.entries} of ${r.total} applied entries instead. Lower report_max_kb below the server's body limit to spare the refused upload`,
      );
    } else if (r.shortened) {
      deps.logger.info({ entries: r.entries, total: r.total, bytes: r.bytes }, `the state report lists ${r.entries} of ${r.total} applied entries (report_max_kb ${deps.config.report_max_kb}: manual entries first, then by score)`);
    } else if (before !== undefined) {
      deps.logger.info({ entries: r.entries, bytes: r.bytes }, `the state report lists every applied entry again (${r.entries})`);
    }
  }
  try {
    deps.state?.update({ report: { at: Math.floor(Date.now() / 1000), ...r } });
  } catch (err) {
    deps.logger.warn(`state write failed: ${errorMessage(err)}`);
  }
}
