import type { AgentConfig } from '../../config/load.js';
import type { Settings } from '../../config/server.js';
import { timeoutUntil, type ApplyResult, type FirewallPlugin } from '../../firewall/index.js';
import type { Logger } from '../../log.js';
import { toCidr } from '../../net/ipv4.js';
import { activeOverrides, mergeOverrides, refusalText, type MergeResult } from '../../policy/overrides.js';
import { SelectedColumns, selectionOf } from '../../policy/selected-columns.js';
import { filterProtected, type ProtectedSet } from '../../policy/protect.js';
import type { Selection } from '../../policy/selected-columns.js';
import { capRules, type SelectedEntry } from '../../policy/types.js';
import type { AppliedEntry } from '../state/applied-entry.js';
import { AppliedColumns, toApplied as columnsToApplied } from '../state/applied-columns.js';
import { loadOverrides } from '../state/overrides-store.js';
import { liveEntries, localProtectedSet, logRemoved } from './protect-applied.js';
import type { AppliedSet, StateStore } from '../state/store.js';
import type { LeaveFacts } from '../../policy/leave-reasons.js';
import type { Cause } from '../state/history/codes.js';
import { historyChange } from './history-facts.js';

/**
 * The local overrides on their way into the kernel: merged into a cycle's
 * selection, into the start-up restore, and applied on their own between
 * cycles (an `allow`/`block` the daemon is told of, an allow that ends, a
 * changed manual decision), each time through the protected set.
 */

function logRefused(logger: Logger, merged: MergeResult): void {
  for (const { override, refusal } of merged.refused) logger.warn({ cidr: override.cidr.text, why: refusal.why }, `local block not applied: ${refusalText(override.cidr, refusal)}`);
}

/**
 * A cycle's selection with the overrides merged in, and the selection without them (`base`: what later
 * local applies start from). With no override in force (the usual case) both are the selection's own
 * columns; otherwise its entries are made as objects for the merge (overrides are few, the merge is rare).
 */
export function selectionWithOverrides(
  selection: Selection,
  ctx: { config: AgentConfig; protectedSet: ProtectedSet; maximumRules: number; now: number; logger: Logger },
): { selection: Selection; base: SelectedColumns } {
  const overrides = loadOverrides(ctx.config.state_dir);
  const base = selection.columns;
  if (activeOverrides(overrides, ctx.now).length === 0) {
    const columns = base.first(capRules(ctx.maximumRules));
    return { selection: columns === base ? selection : selectionOf(columns, selection.skipped, selection.explained), base };
  }
  const merged = mergeOverrides({
    entries: selection.entries,
    overrides,
    protectedSet: ctx.protectedSet,
    minPrefix: ctx.config.min_prefix,
    maximumRules: ctx.maximumRules,
    now: ctx.now,
  });
  logRefused(ctx.logger, merged);
  return { selection: selectionOf(SelectedColumns.of(merged.entries), selection.skipped, selection.explained), base };
}

/** Applied entries (state file form) as selection entries; unparsable ones are left out. */
export function fromApplied(entries: readonly AppliedEntry[]): SelectedEntry[] {
  return entries.flatMap((e) => {
    const cidr = toCidr(e.cidr);
    return cidr ? [{ cidr, reason: e.reason, score: null, expiresAt: e.expiresAt }] : [];
  });
}

/** The live entries of an applied set that came from the feeds (its local blocks are re-read from the overrides file). */
export function baseFromApplied(set: AppliedSet | undefined, now: number): SelectedEntry[] {
  return fromApplied(liveEntries(set, now).filter((e) => e.reason !== 'local'));
}

/**
 * The start-up restore's entries with the overrides merged in (an allow must hold from the first
 * write on), capped at maximum_rules like every apply. On the columns: the record's local blocks
 * are left out (they come back from the overrides file alone), and objects are made only when an
 * override is in force (selectionWithOverrides).
 */
export function restoreWithOverrides(kept: AppliedColumns, ctx: { config: AgentConfig; protectedSet: ProtectedSet; maximumRules: number; now: number; logger: Logger }): AppliedColumns {
  const base = new SelectedColumns(kept.length);
  for (let i = 0; i < kept.length; i++) if (kept.reason(i) !== 'local') base.push(kept.starts[i]!, kept.prefixes[i]!, kept.reason(i), null, kept.expiresAt(i));
  const selection = selectionOf(base, { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 });
  return columnsToApplied(selectionWithOverrides(selection, ctx).selection.columns, ctx.now).applied;
}

function toApplied(e: SelectedEntry): AppliedEntry {
  return { cidr: e.cidr.text, reason: e.reason, expiresAt: e.expiresAt };
}

export interface LocalApplyDeps {
  config: AgentConfig;
  state: StateStore;
  plugin: FirewallPlugin;
  logger: Logger;
  settings: Settings;
}

export interface LocalApplyResult {
  /** Entries the firewall holds now (0 and no `apply` when running is disabled). */
  applied: number;
  apply?: ApplyResult;
  /** Entries of the base taken out by a local allow. */
  allowed: number;
}

/** What the change history is told of a local apply: what made it, and what else it knows of why entries left (a decision poll: the decisions). */
export interface LocalApplyCause {
  readonly cause: Extract<Cause, 'override' | 'poll'>;
  readonly facts?: Pick<LeaveFacts, 'whitelist' | 'isManual'>;
}

/**
 * Apply `base` (a selection without overrides) with the current overrides,
 * without pulling anything: the protected set is computed locally and without
 * DNS (the API by its last known addresses), so this takes well under a
 * second. The caller holds the agent lock. Writes the applied set like a cycle.
 */
export async function applyLocal(deps: LocalApplyDeps, base: readonly SelectedEntry[], now: number, why: LocalApplyCause = { cause: 'override' }): Promise<LocalApplyResult> {
  const { config, state, plugin, logger, settings } = deps;
  if (!settings.running) {
    logger.info('running is disabled in the stored configuration: local overrides are kept and applied when it is enabled');
    return { applied: 0, allowed: 0 };
  }
  const protectedSet = await localProtectedSet(config, state, logger, { offline: true });
  const overrides = loadOverrides(config.state_dir);
  const merged = mergeOverrides({ entries: base, overrides, protectedSet, minPrefix: config.min_prefix, maximumRules: settings.maximum_rules, now });
  logRefused(logger, merged);
  // The same last filter as every other write (the base may predate a change of the protected set).
  const { kept, removed } = filterProtected(merged.entries, protectedSet, (e) => e.cidr);
  logRemoved(logger, removed.map((r) => ({ entry: toApplied(r.entry), member: r.member })), 'local apply');
  const live = kept.filter((e) => e.expiresAt === null || e.expiresAt > now);
  const appliedBefore = state.appliedCount(plugin.name) !== undefined;
  const apply = await plugin.apply(
    live.map((e) => ({ cidr: e.cidr, timeoutSeconds: timeoutUntil(e.expiresAt, now) })),
    { capacity: settings.maximum_rules, appliedBefore },
  );
  const applied = new AppliedColumns(live.length);
  for (const e of live) applied.push(e.cidr.start, e.cidr.prefix, e.reason, e.expiresAt, e.score);
  const allows = activeOverrides(overrides, now);
  state.saveApplied({ ts: now, plugin: plugin.name, entries: applied }, historyChange(why.cause, now, () => ({ protectedSet, allows, minPrefix: config.min_prefix, ...why.facts })));
  return { applied: live.length, apply, allowed: merged.allowed };
}
