import { mergeHits } from '../../agent/state/hit-totals.js';
import { hitRows, type HitRow } from '../../agent/inspect/hits-report.js';
import { loadDecisionsCache } from '../../agent/state/decisions-cache.js';
import { UsageError } from '../../errors.js';
import { createScoring } from '../../score/decay.js';
import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';
import { isoTime, printJson, table } from '../format.js';

/** `--top N`: a whole number >= 1, else a usage error naming the option. */
function parseTop(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`--top: expected a whole number of rows, 1 or more, got ${JSON.stringify(value)}`);
  return Number(value);
}

function parseSide(value: string | undefined): 'in' | 'out' | undefined {
  if (value === undefined || value === 'in' || value === 'out') return value;
  throw new UsageError(`--direction: expected in or out, got ${JSON.stringify(value)}`);
}

/**
 * The indicators that matched traffic: the kernel's per-address hit counters
 * (read-only) plus the running totals the daemon keeps for counters the
 * kernel reset, grouped by the applied indicator, with its reason, decayed
 * score and expiry from the state dir. Writes nothing, so it runs beside the
 * daemon.
 */
export async function hitsCommand(opts: GlobalOptions & { json?: boolean; top?: string; direction?: string }): Promise<number> {
  const top = parseTop(opts.top);
  const side = parseSide(opts.direction);
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const plugin = await openPlugin(config, logger, false);
  const kernel = await plugin.readHits();
  const { totals } = mergeHits(state.loadHitTotals(), kernel);
  const decisions = loadDecisionsCache(state.dir, logger);
  const scoring = createScoring(decisions?.formulas ?? {}, () => undefined);
  const now = Math.floor(Date.now() / 1000);
  let rows: HitRow[] = hitRows(totals, state.loadApplied(plugin.name), state.loadFeedCache(), scoring, now);
  if (side) rows = rows.filter((r) => r.direction === side);
  if (top !== undefined) rows = rows.slice(0, top);
  if (opts.json) {
    await printJson({ hits: rows });
    return 0;
  }
  if (rows.length === 0) {
    process.stdout.write('no blocked packets counted\n');
    return 0;
  }
  const body = rows.map((r) => [r.ip, r.direction, r.packets, r.bytes, r.reason ?? '-', r.score ?? '-', r.expires === null ? '-' : isoTime(r.expires)]);
  process.stdout.write(`${table(['indicator', 'dir', 'packets', 'bytes', 'reason', 'score', 'expires'], body, ['l', 'l', 'r', 'r', 'l', 'r', 'l'])}\n`);
  return 0;
}
