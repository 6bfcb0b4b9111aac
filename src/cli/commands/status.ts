import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';
import { errorMessage } from '../../errors.js';
import type { OwnedObject, PluginName } from '../../firewall/index.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { localSettings } from '../../config/local-settings.js';
import type { SmallState } from '../../agent/state/store.js';
import { escapeControls } from '../../util/terminal-text.js';
import { LOCAL_DEFAULT_SOURCES, type SettingSources, type Settings } from '../../config/server.js';
import { dnsStatus, dnsStatusRows } from '../dns-status.js';
import { enforcingOf, readLiveStatus, type LiveStatus } from '../status-live.js';
import { toFirewall } from '../../agent/cycle/reapply.js';

/** One line of text: a multi-line error (a firewall tool's stderr) must not break the label column. */
const oneLine = (text: string) => escapeControls(text.replace(/\s*\n\s*/g, ' ').trim());

function daemonText(live: LiveStatus, now: number): string {
  const d = live.daemon;
  const cycle = live.lock !== undefined ? `; a cycle holds the lock (${live.lock.who})` : '';
  if (!d) return `not running${cycle}`;
  return `running, ${d.who}${d.startedAt !== undefined ? `, up ${duration(now - d.startedAt)}` : ''}${live.lock?.who === d.who ? ', in a cycle now' : cycle}`;
}

function firewallText(live: LiveStatus): string {
  const fw = live.firewall;
  if (fw.error !== undefined) return oneLine(`not read: ${fw.error}`);
  if (fw.plugin === 'dry-run') return 'dry-run (rules rendered to a file only)';
  const absent = fw.objects.filter((o) => o.state !== 'present');
  const objects = absent.length === 0 ? `${fw.objects.length} objects present` : absent.map((o) => `${o.what} ${o.state}`).join(', ');
  return oneLine(`${fw.plugin}: ${objects}${fw.entries !== null ? `, ${fw.entries} entries` : ''}`);
}

/** The label/value rows of `status` (human output): state.json for what the agent did, `live` for what holds now. */
export function statusRows(agid: string, s: SmallState, settings: Settings, sources: SettingSources, now: number, live: LiveStatus): string[][] {
  const c = s.lastCycle;
  const e = enforcingOf(live, settings.running);
  const ov = live.overrides;
  return [
    ['agent', agid],
    ['daemon', daemonText(live, now)],
    ['last sync', c ? `${isoTime(c.ts)} (${duration(now - c.ts)} ago), ${c.ok ? 'ok' : `FAILED code ${c.code}: ${oneLine(c.message ?? '')}`}` : 'never'],
    ['last success', isoTime(s.lastSuccessAt)],
    // Without a daemon nobody will run it (a killed daemon leaves the time behind).
    ['next sync', live.daemon && s.nextSyncAt ? `${isoTime(s.nextSyncAt)} (in ${duration(s.nextSyncAt - now)})` : '-'],
    ['plugin', c?.plugin ?? '-'],
    ['firewall', firewallText(live)],
    ['entries applied', c ? `${c.applied} (${c.byReason.manual} manual, ${c.byReason.url ? `${c.byReason.url} url, ` : ''}${c.byReason.score} score${c.byReason.local ? `, ${c.byReason.local} local` : ''})` : '0'],
    ['enforcing', e.enforcing === true ? `yes (${e.why})` : `${e.enforcing === false ? 'no' : 'unknown'} (${oneLine(e.why)})`],
    ['local overrides', 'error' in ov ? oneLine(`unreadable: ${ov.error}`) : `${ov.allow} allow, ${ov.block} block`],
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

/**
 * `status --probe`, for an exec probe (a container's health check, Kubernetes' exec
 * probes): exit 0 while a daemon runs and the firewall enforces the agent's set, 4
 * otherwise (the firewall's exit code), with one line saying why.
 */
function probeAnswer(live: LiveStatus, e: ReturnType<typeof enforcingOf>): number {
  if (!live.daemon) {
    process.stdout.write('not ready: no daemon running\n');
    return 4;
  }
  process.stdout.write(e.enforcing === true ? `ready: enforcing, ${e.why}\n` : `not ready: ${oneLine(e.why)}\n`);
  return e.enforcing === true ? 0 : 4;
}

/** What the agent did last (state dir), what the firewall holds now (read from the kernel), and whether a daemon runs. */
export async function statusCommand(opts: GlobalOptions & { json?: boolean; probe?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const s = state.small;
  const settings = s.settings ?? localSettings(config);
  const sources = s.sources ?? LOCAL_DEFAULT_SOURCES;
  const c = s.lastCycle;
  const now = Math.floor(Date.now() / 1000);
  const live = await readLiveStatus(config, logger, c?.applied ?? 0, (plugin) => {
    const last = state.loadAppliedColumns(plugin);
    return last ? toFirewall(last.columns, now) : undefined;
  });
  const e = enforcingOf(live, settings.running);
  if (opts.probe) return probeAnswer(live, e);
  const out = {
    agid: config.agid,
    config_path: config.configPath,
    state_dir: config.state_dir,
    enforcing: e.enforcing,
    enforcing_reason: e.why,
    daemon: live.daemon
      ? {
          running: true,
          pid: live.daemon.pid ?? null,
          other_pid_namespace: live.daemon.otherPidNamespace,
          started_at: live.daemon.startedAt ?? null,
          uptime_seconds: live.daemon.startedAt !== undefined ? now - live.daemon.startedAt : null,
        }
      : { running: false, pid: null, other_pid_namespace: null, started_at: null, uptime_seconds: null },
    lock_holder: live.lock?.pid ?? null,
    firewall: {
      plugin: live.firewall.plugin,
      objects: live.firewall.objects,
      entries: live.firewall.entries,
      checked: live.firewall.check ? { entries: live.firewall.check.checked, missing: live.firewall.check.missing, extra: live.firewall.check.extra } : null,
      error: live.firewall.error ?? null,
    },
    local_overrides: live.overrides,
    last_sync: c?.ts ?? null,
    last_success: s.lastSuccessAt ?? null,
    ok: c?.ok ?? null,
    code: c?.code ?? null,
    error: c?.errorCode ?? null,
    message: c?.message ?? null,
    plugin: c?.plugin ?? null,
    applied: c?.applied ?? 0,
    by_reason: c?.byReason ?? { manual: 0, score: 0, local: 0 },
    skipped: c?.skipped ?? null,
    next_sync: live.daemon ? (s.nextSyncAt ?? null) : null,
    cursor: s.cursor ?? null,
    last_full_pull: s.lastFullPullAt ?? null,
    repairs: s.repairs?.count ?? 0,
    last_repair: s.repairs?.lastAt ?? null,
    last_repair_objects: s.repairs?.objects ?? [],
    // The state report is bounded (report_max_kb): whether the last one listed every applied entry.
    report: s.report
      ? { at: s.report.at, entries: s.report.entries, applied: s.report.total, shortened: s.report.shortened, bytes: s.report.bytes, refused_bytes: s.report.refused ?? null, stored: s.report.ok }
      : null,
    settings,
    sources,
    dns: dnsStatus(config, logger),
    owned: s.owned ?? null,
  };
  if (opts.json) {
    await printJson(out);
    return 0;
  }
  process.stdout.write(renderStatus([...statusRows(config.agid, s, settings, sources, now, live), ...dnsStatusRows(out.dns)]));
  return 0;
}
