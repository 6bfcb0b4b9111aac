import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FeedHeader } from '../../api/wire.js';
import { StateError } from '../../errors.js';
import { IndicatorMap } from '../../feed/indicator.js';
import type { Logger } from '../../log.js';
import { writeFileAtomic } from '../../util/atomic-file.js';

/**
 * What `plan --offline` needs besides the score feed cache: the two manual-decision feeds
 * (pulled in full every cycle, so otherwise kept nowhere) and the feed header's formula,
 * as of the last successful pull. Small (manual decisions number in the hundreds), JSON.
 */
const FILE = 'decisions-cache.json';
const VERSION = 1;

export interface DecisionsCache {
  /** Epoch s of the pull these come from. */
  at: number;
  /** The formulas of the feed header (what the scoring reads from it). */
  formulas: Formulas;
  manualBlocks: IndicatorMap;
  whitelist: IndicatorMap;
}

type Formulas = { eval?: string; exec_python?: string };

function formulasOf(header: unknown): Formulas {
  const h = (header ?? {}) as Record<string, unknown>;
  return {
    ...(typeof h.eval === 'string' ? { eval: h.eval } : {}),
    ...(typeof h.exec_python === 'string' ? { exec_python: h.exec_python } : {}),
  };
}

type Row = [start: number, prefix: number, ts: number, score: number];

function rows(map: IndicatorMap): Row[] {
  const c = map.columns();
  const out: Row[] = [];
  for (let i = 0; i < map.size; i++) out.push([c.starts[i]!, c.prefixes[i]!, c.tss[i]!, c.scores[i]!]);
  return out;
}

function toMap(value: unknown): IndicatorMap | undefined {
  if (!Array.isArray(value)) return undefined;
  const map = new IndicatorMap(Math.max(16, value.length));
  for (const r of value as unknown[]) {
    if (!Array.isArray(r) || r.length !== 4 || !r.every((n) => typeof n === 'number' && Number.isFinite(n))) return undefined;
    const [start, prefix, ts, score] = r as Row;
    // Canonical networks only, as the pull produced them.
    if (!Number.isInteger(start) || start < 0 || start > 0xffffffff || !Number.isInteger(prefix) || prefix < 0 || prefix > 32) return undefined;
    if (prefix < 32 && start % 2 ** (32 - prefix) !== 0) return undefined;
    map.upsertParts(start, prefix, ts, score);
  }
  return map;
}

export function saveDecisionsCache(stateDir: string, feeds: { manualBlocks: IndicatorMap; whitelist: IndicatorMap; header: FeedHeader | undefined }, at: number): void {
  try {
    writeFileAtomic(
      join(stateDir, FILE),
      JSON.stringify({ version: VERSION, at, formulas: formulasOf(feeds.header), manual: rows(feeds.manualBlocks), whitelist: rows(feeds.whitelist) }),
    );
  } catch (err) {
    throw new StateError(`cannot write ${FILE} in ${stateDir}: ${(err as Error).message}`, { cause: err });
  }
}

/** The cache, or undefined when there is none or it cannot be read (with a warning: it is only used offline). */
export function loadDecisionsCache(stateDir: string, logger: Logger): DecisionsCache | undefined {
  const path = join(stateDir, FILE);
  if (!existsSync(path)) return undefined;
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown; at?: unknown; formulas?: unknown; manual?: unknown; whitelist?: unknown };
    const manualBlocks = toMap(raw.manual);
    const whitelist = toMap(raw.whitelist);
    if (raw.version !== VERSION || typeof raw.at !== 'number' || !manualBlocks || !whitelist) throw new Error('unknown format');
    return { at: raw.at, formulas: formulasOf(raw.formulas), manualBlocks, whitelist };
  } catch (err) {
    logger.warn({ file: path }, `cannot use ${FILE} (${(err as Error).message}); the next sync rewrites it`);
    return undefined;
  }
}
