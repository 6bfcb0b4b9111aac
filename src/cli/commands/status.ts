import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';
import { errorMessage } from '../../errors.js';
import type { OwnedObject, PluginName } from '../../firewall/index.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { localSettings } from '../../config/local-settings.js';
import type { SmallState } from '../../agent/state.js';
import { escapeControls } from '../../safe-text.js';
import { LOCAL_DEFAULT_SOURCES, type SettingSources, type Settings } from '../../config/server.js';

/** One line of text: a multi-line error (a firewall tool's stderr) must not break the label column. */
const oneLine = (text: string) => escapeControls(text.replace(/\s*\n\s*/g, ' ').trim());

/** What the firewall holds of the agent's objects now: read, or why it could not be. */
export type FirewallView = { objects: OwnedObject[] } | { error: string };

/**
 * Whether the agent is enforcing: never "yes" while a hook, chain, table or set
 * is missing (a firewall reload removed it) or belongs to someone else, whatever
 * the last cycle recorded. `enforcing` is null when the firewall cannot be read.
 */
export function enforcingState(settings: Settings, view: FirewallView | undefined): { enforcing: boolean | null; text: string } {
  if (!settings.running) return { enforcing: false, text: 'no (running disabled)' };
  if (view === undefined) return { enforcing: true, text: 'yes' };
  if ('error' in view) return { enforcing: null, text: `unknown: cannot read the firewall (${oneLine(view.error)}); run status as root` };
  const missing = view.objects.filter((o) => o.state === 'absent').map((o) => o.what);
  const foreign = view.objects.filter((o) => o.state === 'foreign').map((o) => o.what);
  const unreadable = view.objects.filter((o) => o.state === 'unreadable');
  if (missing.length || foreign.length) {
    const parts = [...(missing.length ? [`missing ${missing.join(', ')}`] : []), ...(foreign.length ? [`not the agent's: ${foreign.join(', ')}`] : [])];
    const hint = missing.length ? ' (the next cycle re-creates what is missing)' : ' (choose another name in config.json)';
    return { enforcing: false, text: `NO: ${parts.join('; ')}${hint}` };
  }
  if (unreadable.length) return { enforcing: null, text: `unknown: cannot read ${unreadable.map((o) => o.what).join(', ')}; run status as root` };
  return { enforcing: true, text: 'yes' };
}

/** The label/value rows of `status` (human output), from the state dir's small state and the firewall's objects. */
export function statusRows(agid: string, s: SmallState, settings: Settings, sources: SettingSources, now: number, view?: FirewallView): string[][] {
  const c = s.lastCycle;
  return [
    ['agent', agid],
    ['last sync', c ? `${isoTime(c.ts)} (${duration(now - c.ts)} ago), ${c.ok ? 'ok' : `FAILED code ${c.code}: ${oneLine(c.message ?? '')}`}` : 'never'],
    ['last success', isoTime(s.lastSuccessAt)],
    ['next sync', s.nextSyncAt ? `${isoTime(s.nextSyncAt)} (in ${duration(s.nextSyncAt - now)})` : '-'],
    ['plugin', c?.plugin ?? '-'],
    ['entries applied', c ? `${c.applied} (${c.byReason.manual} manual, ${c.byReason.score} score)` : '0'],
    ['enforcing', enforcingState(settings, view).text],
    ['maximum_rules', `${settings.maximum_rules} (${sources.maximum_rules})`],
    ['score_threshold', `${settings.score_threshold} (${sources.score_threshold})`],
    ['sync_time', `${settings.sync_time} min (${sources.sync_time})`],
    ['last full pull', isoTime(s.lastFullPullAt)],
  ];
}

/** Label column, two spaces, value column; no header. */
export function renderStatus(rows: string[][]): string {
  return table(['', ''], rows).split('\n').slice(2).join('\n') + '\n';
}

const PLUGINS: readonly string[] = ['ipset', 'nftables', 'iptables', 'dry-run'];

/** The agent's firewall objects, read-only, with the backend the last cycle used (else the configured one). */
async function readFirewall(opts: GlobalOptions, last: string | undefined): Promise<FirewallView> {
  const { config, logger } = loadContext(opts);
  try {
    const only = last !== undefined && PLUGINS.includes(last) ? (last as PluginName) : undefined;
    const plugin = await openPlugin(config, logger, false, only);
    return { objects: await plugin.objects() };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** What the agent did last and will do next, from the state dir, and whether its firewall objects are all there (read-only; no network). */
export async function statusCommand(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const s = state.small;
  const settings = s.settings ?? localSettings(config);
  const sources = s.sources ?? LOCAL_DEFAULT_SOURCES;
  const c = s.lastCycle;
  const now = Math.floor(Date.now() / 1000);
  const view = settings.running ? await readFirewall(opts, c?.plugin) : undefined;
  const enforcing = enforcingState(settings, view);
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
    settings,
    sources,
    owned: s.owned ?? null,
    enforcing: enforcing.enforcing,
    firewall_objects: view && 'objects' in view ? view.objects : null,
  };
  if (opts.json) {
    await printJson(out);
    return 0;
  }
  process.stdout.write(renderStatus(statusRows(config.agid, s, settings, sources, now, view)));
  return 0;
}
