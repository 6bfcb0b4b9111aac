import { loadContext, openState, type GlobalOptions } from '../context.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { localSettings } from '../../config/local-settings.js';
import type { SmallState } from '../../agent/state.js';
import { escapeControls } from '../../safe-text.js';
import { LOCAL_DEFAULT_SOURCES, type SettingSources, type Settings } from '../../config/server.js';

/** One line of text: a multi-line error (a firewall tool's stderr) must not break the label column. */
const oneLine = (text: string) => escapeControls(text.replace(/\s*\n\s*/g, ' ').trim());

/** The label/value rows of `status` (human output), from the state dir's small state. */
export function statusRows(agid: string, s: SmallState, settings: Settings, sources: SettingSources, now: number): string[][] {
  const c = s.lastCycle;
  return [
    ['agent', agid],
    ['last sync', c ? `${isoTime(c.ts)} (${duration(now - c.ts)} ago), ${c.ok ? 'ok' : `FAILED code ${c.code}: ${oneLine(c.message ?? '')}`}` : 'never'],
    ['last success', isoTime(s.lastSuccessAt)],
    ['next sync', s.nextSyncAt ? `${isoTime(s.nextSyncAt)} (in ${duration(s.nextSyncAt - now)})` : '-'],
    ['plugin', c?.plugin ?? '-'],
    ['entries applied', c ? `${c.applied} (${c.byReason.manual} manual, ${c.byReason.score} score)` : '0'],
    ['enforcing', settings.running ? 'yes' : 'no (running disabled)'],
    ['maximum_rules', `${settings.maximum_rules} (${sources.maximum_rules})`],
    ['score_threshold', `${settings.score_threshold} (${sources.score_threshold})`],
    ['sync_time', `${settings.sync_time} min (${sources.sync_time})`],
    ['last full pull', isoTime(s.lastFullPullAt)],
    ['repairs', s.repairs ? `${s.repairs.count}, last ${isoTime(s.repairs.lastAt)} (${duration(now - s.repairs.lastAt)} ago): ${oneLine(s.repairs.objects.join(', '))}` : '0'],
  ];
}

/** Label column, two spaces, value column; no header. */
export function renderStatus(rows: string[][]): string {
  return table(['', ''], rows).split('\n').slice(2).join('\n') + '\n';
}

/** What the agent did last and will do next, from the state dir only (no network, no firewall). */
export async function statusCommand(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const s = state.small;
  const settings = s.settings ?? localSettings(config);
  const sources = s.sources ?? LOCAL_DEFAULT_SOURCES;
  const c = s.lastCycle;
  const now = Math.floor(Date.now() / 1000);
  const out = {
    agid: config.agid,
    config_path: config.configPath,
    state_dir: config.state_dir,
    last_sync: c?.ts ?? null,
    last_success: s.lastSuccessAt ?? null,
    ok: c?.ok ?? null,
    code: c?.code ?? null,
    error: c?.errorCode ?? null,
    message: c?.message ?? null,
    plugin: c?.plugin ?? null,
    applied: c?.applied ?? 0,
    by_reason: c?.byReason ?? { manual: 0, score: 0 },
    skipped: c?.skipped ?? null,
    next_sync: s.nextSyncAt ?? null,
    cursor: s.cursor ?? null,
    last_full_pull: s.lastFullPullAt ?? null,
    repairs: s.repairs?.count ?? 0,
    last_repair: s.repairs?.lastAt ?? null,
    last_repair_objects: s.repairs?.objects ?? [],
    settings,
    sources,
  };
  if (opts.json) {
    await printJson(out);
    return 0;
  }
  process.stdout.write(renderStatus(statusRows(config.agid, s, settings, sources, now)));
  return 0;
}
