import { GuardError } from '../../errors.js';
import type { ApplyResult, FirewallPlugin } from '../../firewall/index.js';
import type { ProtectedSet } from '../../policy/protect.js';
import { toApplied, type AppliedList } from '../state/applied-columns.js';
import type { CycleDeps, PlanResult } from './types.js';
import { checkShrink } from './shrink-guard.js';
import { selectionWithOverrides } from './overrides-apply.js';
import type { StateStore } from '../state/store.js';
import type { PhaseClock } from './timings.js';
import { historyChange, localAllows } from './history-facts.js';

/**
 * The cycle's write (one job of the daemon's writer): the local overrides merged in as they are
 * now (one given while the cycle pulled is in it; the shrink guard and the delta start from what
 * the kernel and the applied record hold after it), then enforce, and the record saved with it.
 * `merged` is told the plan as applied.
 */
export async function enforcePlan(
  deps: CycleDeps,
  plugin: FirewallPlugin,
  pulled: PlanResult,
  protectedSet: ProtectedSet,
  now: number,
  clock: PhaseClock,
  merged: (plan: PlanResult) => void,
): Promise<{ apply?: ApplyResult; entries: AppliedList }> {
  const { config, state, logger } = deps;
  const mergedAt = (deps.now ?? epochNow)();
  const overrides = selectionWithOverrides(pulled.selection, { config, protectedSet, logger, maximumRules: pulled.settings.maximum_rules, now: mergedAt });
  const plan = { ...pulled, selection: overrides.selection, base: overrides.base };
  merged(plan);
  deps.onSettings?.(plan.settings);
  const e = await enforce(deps, plugin, plan, now);
  recordOwned(state, plugin.name, e.apply, now);
  clock.lap('apply');
  const savedAt = (deps.now ?? epochNow)();
  const change = plan.settings.running
    ? historyChange('cycle', savedAt, () => plan.leaving?.(savedAt, localAllows(config, savedAt)) ?? { protectedSet })
    : { cause: 'cycle' as const, now: savedAt, all: 'running_off' as const };
  state.saveApplied({ ts: now, plugin: plugin.name, entries: e.entries }, change);
  clock.lap('save');
  if (e.apply) deps.onApplied?.(plan, mergedAt);
  return e;
}

const epochNow = () => Math.floor(Date.now() / 1000);

/** The cycle's firewall step: the shrink guard, then apply the selection (or flush when running is off). */
export async function enforce(deps: CycleDeps, plugin: FirewallPlugin, plan: PlanResult, now: number): Promise<{ apply?: ApplyResult; entries: AppliedList }> {
  const { config, state, logger } = deps;
  if (!plan.settings.running) {
    logger.info('running is disabled in the stored configuration: removing the agent rules, still syncing and reporting');
    await plugin.flush();
    return { entries: [] };
  }
  const lastCount = state.appliedCount(plugin.name);
  // Entries as counted when applied, not filtered by the clock: after a forward clock step every
  // timed entry looks expired, and a guard comparing against 0 would let an emptied feed through.
  const verdict = deps.force
    ? { allow: true, pending: undefined }
    : checkShrink(lastCount ?? 0, plan.selection.columns.length, config.shrink_guard_ratio, state.small.pendingShrink, now);
  state.update({ pendingShrink: verdict.pending });
  if (!verdict.allow) throw new GuardError(verdict.message!);
  if ('message' in verdict && verdict.message) logger.warn(verdict.message);
  // On the clock of the apply, not of the cycle's start: the kernel counts timeouts from when
  // the entries go in (counted from the start, a long pull made every expiry that much late,
  // and the next cycle saw every timeout as changed), and an entry whose expiry passed during
  // the pull is left out (the kernel would drop it within the second anyway).
  const applyAt = (deps.now ?? epochNow)();
  const { firewall, applied } = toApplied(plan.selection.columns, applyAt);
  // The set is sized for the maximum_rules in force (the server's), not config.json's.
  const apply = await plugin.apply(firewall, { capacity: plan.settings.maximum_rules, appliedBefore: lastCount !== undefined });
  return { apply, entries: applied };
}

/** Record what the apply left marked as the agent's (cleared when running is off and the objects were flushed). */
export function recordOwned(state: StateStore, plugin: string, apply: ApplyResult | undefined, now: number): void {
  const objects = apply?.owned ? [...apply.owned] : [];
  const prev = state.small.owned;
  if (prev === undefined ? objects.length === 0 : prev.plugin === plugin && prev.objects.join('\n') === objects.join('\n')) return;
  state.update({ owned: objects.length ? { plugin, objects, since: now } : undefined });
}
