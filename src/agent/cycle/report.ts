import { hostname } from 'node:os';
import { ApiUnreachableError, GuardError, ServerConfigError, type WcfError, errorMessage, reportCodeOf } from '../../errors.js';
import type { StateReportFields } from '../../api/wire.js';
import type { Settings } from '../../config/server.js';
import type { PluginName } from '../../firewall/index.js';
import type { Selection } from '../../policy/selected-columns.js';
import { AGENT_VERSION } from '../../version.js';
import { AppliedColumns, countByReason, type AppliedList } from '../state/applied-columns.js';
import type { CycleDeps } from './types.js';
import type { CycleRecord, StateStore } from '../state/store.js';

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
  deps: Pick<CycleDeps, 'config' | 'api' | 'logger'>,
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
    // The applied list as it is: columns after an apply are written straight into the body's bytes.
    const blacklist = c.current instanceof AppliedColumns ? c.current : c.current.map((e) => e.cidr);
    const reported = await deps.api.report(fields, blacklist, { retry: c.error === undefined });
    if (!reported) logger.warn('the server has no record for this agent; report not stored');
    return reported;
  } catch (err) {
    // After a failed cycle (already logged once) the report failing too is a detail.
    (c.error ? logger.debug : logger.warn).call(logger, { code: (err as WcfError).code }, `state report failed: ${errorMessage(err)}`);
    return false;
  }
}
