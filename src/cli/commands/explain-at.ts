import { covers, verdictAt, type AtVerdict, type CurrentEntry, type EntryState, type Target } from '../../agent/inspect/history.js';
import { enforcedReason, reasonText } from '../../agent/state/history/codes.js';
import type { StateStore } from '../../agent/state/store.js';
import type { AgentConfig } from '../../config/load.js';
import { createDnsPlugin } from '../../dns/index.js';
import { hostDomainPolicy } from '../../host/domain-policy.js';
import { UsageError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { escapeControls } from '../../util/terminal-text.js';
import { loadContext, openState, type GlobalOptions } from '../context.js';
import { duration, isoTime, printJson } from '../format.js';
import { parseTime } from '../time-arg.js';
import { eventJson, parseTarget, targetText } from './history.js';

/** The firewall backend whose record says what is in force now: the history's newest, else the configured one. */
async function currentAddresses(state: StateStore, target: Target & { kind: 'addresses' }, plugin: string | undefined, now: number): Promise<CurrentEntry[]> {
  if (!plugin) return [];
  const record = state.loadAppliedColumns(plugin);
  if (!record) return [];
  const c = record.columns;
  const out: CurrentEntry[] = [];
  for (let i = 0; i < c.length; i++) {
    const start = c.starts[i]!;
    if (start > target.cidr.end || start + 2 ** (32 - c.prefixes[i]!) - 1 < target.cidr.start) continue;
    const expires = c.expiresAt(i);
    if (expires !== null && expires <= now) continue;
    out.push({ entry: c.text(i), reason: enforcedReason(c.reason(i)), expires: expires === null ? null : Math.floor(expires) });
  }
  return out;
}

/** The names the resolver holds now (the configured backend's own files), those bearing on the target. */
async function currentNames(config: AgentConfig, logger: Logger, target: Target & { kind: 'names' }): Promise<CurrentEntry[]> {
  if (!config.url_feed) return [];
  try {
    const names = await createDnsPlugin(config, { logger, dryRun: config.dns_plugin === 'dry-run', policy: hostDomainPolicy(config, logger) }).list();
    return names.filter((n) => covers(n, target) || n.endsWith(`.${target.name}`)).map((entry) => ({ entry, reason: 'unknown' as const, expires: null }));
  } catch {
    return [];
  }
}

function stateJson(s: EntryState & { covers?: boolean }) {
  return {
    entry: s.entry,
    ...(s.covers !== undefined ? { covers: s.covers } : {}),
    in_force: s.inForce,
    reason: s.reason,
    since: s.since,
    score: s.score === null ? null : Number(s.score.toPrecision(7)),
    rank: s.rank,
    cause: s.cause,
    expires: s.expires ?? null,
  };
}

const verdictWord = (v: AtVerdict) => (v.blocked === null ? 'unknown' : v.blocked ? v.by!.reason : 'not_blocked');

function printText(target: Target, v: AtVerdict): void {
  const name = targetText(target);
  const out: string[] = [];
  for (const u of v.unreadable) out.push(`warning: ${escapeControls(u)}: not read`);
  if (v.blocked === null) {
    out.push(
      v.from === undefined
        ? `${name} at ${isoTime(v.at)}: unknown: the change history is ${v.unreadable.length ? 'unreadable' : 'empty'}`
        : `${name} at ${isoTime(v.at)}: unknown: the change history does not reach back that far (it begins at ${isoTime(v.from)}, ${duration(v.from - v.at)} later; history_max_mb bounds how far back it goes)`,
    );
  } else {
    const by = v.by;
    out.push(`${name} at ${isoTime(v.at)}: ${by ? `BLOCKED (${reasonText(by.reason)})` : 'not blocked'}`);
    if (by) {
      const since = by.since === null ? 'since before the history begins' : `since ${isoTime(by.since)}${by.cause ? ` (${by.cause})` : ''}`;
      const detail = [by.score !== null ? `score ${by.score.toFixed(2)}` : '', by.rank !== null ? `rank ${by.rank}` : '', by.expires === null ? 'no timeout' : typeof by.expires === 'number' ? `kernel timeout until ${isoTime(by.expires)}` : '']
        .filter(Boolean)
        .join(', ');
      out.push(`  by:          ${escapeControls(by.entry)} ${since}${detail ? `; ${detail}` : ''}`);
    }
    const inside = v.entries.filter((s) => s.inForce && !s.covers);
    if (inside.length) out.push(`  inside it:   ${inside.length} entr${inside.length === 1 ? 'y' : 'ies'} in force (${inside.slice(0, 5).map((s) => escapeControls(s.entry)).join(', ')}${inside.length > 5 ? ', ...' : ''})`);
    const c = v.lastChange;
    if (c) out.push(`  last change: ${isoTime(c.ts)} ${escapeControls(c.entry)} ${c.change} (${reasonText(c.reason)}), ${c.cause}`);
    else out.push('  last change: none in the history');
    out.push(`  history:     from ${isoTime(v.from)}${v.partial ? '; a batch before then is kept only in part (history_max_mb): an entry may be missing' : ''}`);
  }
  process.stdout.write(out.join('\n') + '\n');
}

/** `explain TARGET --at TIME`: the verdict at that moment, from the change history; touches nothing. */
export async function explainAtCommand(value: string, opts: GlobalOptions & { at: string; json?: boolean; refresh?: boolean }): Promise<number> {
  const target = parseTarget(value, 'TARGET');
  const at = parseTime(opts.at, '--at');
  if (opts.refresh) throw new UsageError('--refresh: not with --at (the history answers for the past; the API for now)');
  const now = Math.floor(Date.now() / 1000);
  if (at > now + 60) throw new UsageError(`--at: ${isoTime(at)} is in the future`);
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const v = await verdictAt(config.state_dir, target, at, (plugin) =>
    target.kind === 'addresses' ? currentAddresses(state, target, plugin, now) : currentNames(config, logger, target),
  );
  if (opts.json) {
    await printJson({
      target: targetText(target),
      at,
      blocked: v.blocked,
      verdict: verdictWord(v),
      by: v.by ? stateJson(v.by) : null,
      entries: v.entries.map(stateJson),
      last_change: v.lastChange ? eventJson(v.lastChange) : null,
      history: { from: v.from ?? null, partial: v.partial, unreadable: v.unreadable },
    });
  } else printText(target, v);
  return 0;
}
