import { errorMessage, type WcfError } from '../../errors.js';
import { EntryColumns, timeoutUntil, type ApplyResult, type FirewallPlugin } from '../../firewall/index.js';
import type { Logger } from '../../log.js';
import type { ProtectedMember, ProtectedSet } from '../../policy/protect.js';
import { AppliedColumns, liveColumns } from '../state/applied-columns.js';
import type { AppliedEntry } from '../state/applied-entry.js';
import type { StateStore } from '../state/store.js';
import type { AppliedRecordColumns } from '../state/applied-record.js';
import { logRemoved } from './protect-applied.js';
import { historyChange, localAllows } from './history-facts.js';
import type { Cause } from '../state/history/codes.js';

export interface ReapplyOptions {
  readonly plugin: FirewallPlugin;
  readonly state: StateStore;
  readonly logger: Logger;
  readonly protectedSet: ProtectedSet;
  /** Epoch seconds: what has expired by then is left out. */
  readonly now: number;
  /** The maximum_rules in force (sets are sized for it). */
  readonly capacity: number;
  /** What the log lines call this write: `restore`, `re-assert`, `sync failed`. */
  readonly why: 'restore' | 're-assert' | 'sync failed';
  /** Write only when the protected set took something out (after a failed pull the kernel already holds the rest). */
  readonly onlyWhenRemoved?: boolean;
  /** The entries as they go to the kernel (the start-up restore adds the local overrides). */
  readonly shape?: (kept: AppliedColumns) => AppliedColumns;
  /** The caller logs what was re-created in its own line (one repair, one warning); the plugin then does not. */
  readonly callerLogsRepairs?: boolean;
}

export interface Reapplied {
  readonly last: AppliedRecordColumns;
  /** The live entries left after the protected set. */
  readonly kept: AppliedColumns;
  /** How many the protected set took out (they are gone from the kernel and from the record). */
  readonly removed: number;
  /** Undefined when nothing was written. */
  readonly result?: ApplyResult;
}

/**
 * The live entries of the record (not expired by `now`) without those the protected set holds
 * now, on the columns: the restore of a million entries made no object per entry.
 */
export function keepUnprotected(columns: AppliedColumns, protectedSet: ProtectedSet, now: number): { kept: AppliedColumns; removed: Array<{ entry: AppliedEntry; member: ProtectedMember }> } {
  const kept = new AppliedColumns(columns.length);
  const removed: Array<{ entry: AppliedEntry; member: ProtectedMember }> = [];
  for (let i = 0; i < columns.length; i++) {
    const expiresAt = columns.expiresAt(i);
    if (expiresAt !== null && expiresAt <= now) continue;
    const start = columns.starts[i]!;
    const prefix = columns.prefixes[i]!;
    const member = protectedSet.memberFor({ start, end: start + 2 ** (32 - prefix) - 1 });
    if (member) removed.push({ entry: columns.entry(i), member });
    else kept.push(start, prefix, columns.reason(i), expiresAt);
  }
  return { kept, removed };
}

/** Applied columns as the firewall takes them: the remaining seconds as the kernel timeout. */
export function toFirewall(columns: AppliedColumns, now: number): EntryColumns {
  const out = new EntryColumns(columns.length);
  for (let i = 0; i < columns.length; i++) out.push(columns.starts[i]!, columns.prefixes[i]!, timeoutUntil(columns.expiresAt(i), now));
  return out;
}

/**
 * The one way the last applied set goes back to the kernel outside a cycle's own apply: the
 * start-up restore, the re-assert of removed objects before a pull, the drop of newly
 * protected addresses after a failed one. Each reads the record, passes it through the
 * protected set as it is now (an address that became protected since does not come back),
 * applies it, and saves the record without what was taken out. Undefined without a record.
 */
export async function reapplyLast(o: ReapplyOptions): Promise<Reapplied | undefined> {
  const last = o.state.loadAppliedColumns(o.plugin.name);
  if (!last) return undefined;
  const { kept, removed } = keepUnprotected(last.columns, o.protectedSet, o.now);
  if (o.onlyWhenRemoved && removed.length === 0) return { last, kept, removed: 0 };
  const entries = o.shape ? o.shape(kept) : kept;
  // What the kernel holds, as far as the record says: the entries before the protected set and the overrides.
  const result = await o.plugin.apply(toFirewall(entries, o.now), { capacity: o.capacity, appliedBefore: true, callerLogsRepairs: o.callerLogsRepairs, held: toFirewall(liveColumns(last.columns, o.now), o.now) });
  // The record is what the kernel holds: saved when the protected set took something out, and
  // (the restore) when the local overrides changed what goes back; expiries alone wait for the next write.
  if (removed.length || o.shape) {
    const allows = localAllows({ state_dir: o.state.dir }, o.now);
    const change = historyChange(CAUSE[o.why], o.now, () => ({ protectedSet: o.protectedSet, allows }), { previous: last.columns, onlyIfChanged: removed.length === 0 });
    o.state.saveApplied({ ts: last.ts, plugin: o.plugin.name, entries }, change);
  }
  if (removed.length) logRemoved(o.logger, removed, o.why);
  if (o.why === 'restore') {
    // Only what the kernel really lacked: a table built anew writes every entry (an upgrade that
    // changes a set's type), which says nothing of what was missing.
    const missing = result.rebuilt ? `; the table was ${result.rebuilt}` : result.added > 0 ? `; ${result.added} were not in the kernel (a reboot, a flush or another tool removed them)` : '';
    const relaid = result.relaid ? `; its objects were laid out again (they were laid out for ${result.relaid})` : '';
    o.state.noteHistory(o.plugin.name, 'restore', o.now, 'restored', `the last applied set (${entries.length} entries) applied at start-up${missing}${relaid}`);
  }
  return { last, kept, removed: removed.length, result };
}

const CAUSE: Record<ReapplyOptions['why'], Cause> = { restore: 'restore', 're-assert': 'repair', 'sync failed': 'cycle' };

/**
 * When a cycle applied nothing (its pull failed, or the guard held it back),
 * the kernel still holds the last applied set: take out of it what has become
 * protected since (the API moved to a blocked address, an operator added a
 * blocked resolver to the allowlist), so the agent can reach its API again.
 * Everything else stays exactly as it was: nothing is applied when nothing is
 * protected. Answers how many entries left; never throws (the cycle reports
 * its own error).
 */
export async function dropNewlyProtected(
  plugin: FirewallPlugin,
  state: StateStore,
  protectedSet: Promise<ProtectedSet>,
  logger: Logger,
  now: number,
  capacity: number,
): Promise<number> {
  try {
    const r = await reapplyLast({ plugin, state, logger, protectedSet: await protectedSet, now, capacity, why: 'sync failed', onlyWhenRemoved: true });
    return r?.removed ?? 0;
  } catch (err) {
    logger.error({ code: (err as WcfError).code }, `could not remove newly protected addresses from the firewall: ${errorMessage(err)}`);
    return 0;
  }
}
