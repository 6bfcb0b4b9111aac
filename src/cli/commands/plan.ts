import type { PlanResult } from '../../agent/cycle/types.js';
import { computePlan } from '../../agent/cycle/cycle.js';
import { computeOfflinePlan } from '../../agent/inspect/offline-plan.js';
import { UsageError } from '../../errors.js';
import { readSmallState } from '../../agent/state/store.js';
import { createApi, loadContext, openState, type GlobalOptions } from '../context.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { createProgress } from '../progress.js';
import { dnsPlanToJson, printDomainsTable } from '../dns-plan.js';

/** Four significant digits: enough to rank and compare with a threshold, and no `5.283019648302915`. */
export function roundScore(score: number | null): number | null {
  return score === null ? null : Number(score.toPrecision(4));
}

/** `offline`: planned from the cache of the pull at `feed_as_of` (epoch s), without asking the API. */
export function planToJson(agid: string, plan: PlanResult, offline?: { feedAsOf: number }) {
  const { selection, now } = plan;
  return {
    agid,
    generated_at: now,
    offline: offline ? { feed_as_of: offline.feedAsOf } : null,
    settings: plan.settings,
    sources: plan.sources,
    agent_record: offline ? null : plan.agentRecord,
    scoring: plan.scoring,
    counts: {
      selected: selection.entries.length,
      manual: selection.entries.filter((e) => e.reason === 'manual').length,
      url: selection.entries.filter((e) => e.reason === 'url').length,
      score: selection.entries.filter((e) => e.reason === 'score').length,
      local: selection.entries.filter((e) => e.reason === 'local').length,
      skipped: selection.skipped,
      feed: plan.pulled.feed,
      manual_blocks: plan.pulled.manual,
      whitelisted: plan.pulled.whitelist,
      invalid: plan.pulled.invalid,
    },
    entries: selection.entries.map((e) => {
      // Whole seconds, rounded down as the kernel timeout is: the entry is gone by then.
      const expires = e.expiresAt === null ? null : Math.floor(e.expiresAt);
      return { ip: e.cidr.text, reason: e.reason, score: roundScore(e.score), expires, expires_in: expires === null ? null : expires - now };
    }),
    ...dnsPlanToJson(plan.dns, now),
  };
}

export function printPlanTable(plan: PlanResult, limit: number): void {
  const { selection, now } = plan;
  const rows = selection.entries.slice(0, limit).map((e) => [
    e.reason,
    e.cidr.text,
    e.score === null ? '-' : e.score.toFixed(2),
    e.expiresAt === null ? 'never' : duration(e.expiresAt - now),
  ]);
  process.stdout.write(table(['reason', 'ip', 'score now', 'expires in'], rows, ['l', 'l', 'r', 'r']) + '\n');
  if (selection.entries.length > limit) process.stdout.write(`... and ${selection.entries.length - limit} more (use --json or --limit)\n`);
  const s = selection.skipped;
  const manual = selection.entries.filter((e) => e.reason === 'manual').length;
  const url = selection.entries.filter((e) => e.reason === 'url').length;
  const local = selection.entries.filter((e) => e.reason === 'local').length;
  process.stdout.write(
    `\n${selection.entries.length} entries (${manual} manual, ${url ? `${url} url, ` : ''}${selection.entries.length - manual - url - local} score${local ? `, ${local} local` : ''}) of ${plan.pulled.feed} feed indicators at ${isoTime(now)}\n` +
      `threshold ${plan.settings.score_threshold}, maximum_rules ${plan.settings.maximum_rules}, formula: ${plan.scoring}\n` +
      `skipped: ${s.threshold} below threshold, ${s.cap} over the cap, ${s.whitelist} whitelisted, ${s.allowlist} protected/allowlisted, ${s.too_wide} too wide\n`,
  );
  printDomainsTable(plan.dns, now, limit);
}

export const DEFAULT_PLAN_LIMIT = 50;

/** `--limit N`: a whole number >= 1 (digits only), else a usage error naming the option. */
export function parseLimit(value: string | undefined): number {
  if (value === undefined) return DEFAULT_PLAN_LIMIT;
  const v = value.trim();
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) {
    throw new UsageError(`--limit: expected a whole number of rows, 1 or more, got ${JSON.stringify(value)}`);
  }
  return Number(v);
}

export async function planCommand(opts: GlobalOptions & { json?: boolean; limit?: string; offline?: boolean }): Promise<number> {
  const limit = parseLimit(opts.limit); // before anything is read or sent
  const { config, logger } = loadContext(opts);
  if (opts.offline) {
    const { plan, feedAsOf } = await computeOfflinePlan({ config, state: openState(config, logger), logger });
    if (opts.json) await printJson(planToJson(config.agid, plan, { feedAsOf }));
    else {
      process.stdout.write(`offline: planned from the feed cached at ${isoTime(feedAsOf)} (${duration(plan.now - feedAsOf)} ago); the API was not asked\n\n`);
      printPlanTable(plan, limit);
    }
    return 0;
  }
  const api = createApi(config, logger);
  try {
    // plan touches nothing: no state writes (not even the state dir), no firewall; it reads the
    // state only for the last settings, and always pulls in full (no feed cache).
    const state = { small: readSmallState(config.state_dir), loadFeedCache: () => undefined };
    const progress = createProgress({ json: opts.json });
    progress.connecting(new URL(config.base_url).host, api.client);
    const plan = await computePlan({ config, api, state, logger, onProgress: progress.onProgress }, false).finally(() => progress.done());
    if (opts.json) await printJson(planToJson(config.agid, plan));
    else printPlanTable(plan, limit);
    return 0;
  } finally {
    await api.client.close();
  }
}
