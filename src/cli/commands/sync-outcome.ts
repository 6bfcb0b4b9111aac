import type { CycleOutcome } from '../../agent/cycle/types.js';

/**
 * What `sync --json` prints: how the cycle went, in counts and times. The selected
 * entries themselves are `plan --json`'s (at 100,000 indicators they were 1.9 MB
 * here, for a line a script reads `ok` and `code` from).
 */
export function syncOutcomeToJson(outcome: CycleOutcome) {
  const r = outcome.record;
  const plan = outcome.plan;
  const a = outcome.apply;
  return {
    ok: r.ok,
    code: r.code,
    error: r.errorCode ?? null,
    message: r.message ?? null,
    plugin: r.plugin,
    running: r.running,
    full_pull: r.fullPull,
    // What the selection wanted (null when the cycle failed before selecting), then what the firewall holds now.
    selected: plan ? plan.selection.entries.length : null,
    applied: r.applied,
    by_reason: r.byReason,
    skipped: r.skipped,
    feed: plan
      ? {
          indicators: plan.pulled.feed,
          manual_blocks: plan.pulled.manual,
          whitelisted: plan.pulled.whitelist,
          invalid: plan.pulled.invalid,
        }
      : null,
    changes: a ? { added: a.added, removed: a.removed, updated: a.updated, mode: a.mode, repaired: a.repaired } : null,
    reported: outcome.reported,
    dns: outcome.dns ?? null,
    duration_ms: r.durationMs,
    timings_ms: outcome.timings ?? null,
  };
}
