import { historyOf, type Target } from '../../agent/inspect/history.js';
import { reasonText } from '../../agent/state/history/codes.js';
import type { HistoryEvent } from '../../agent/state/history/events.js';
import type { HistoryNote } from '../../agent/state/history/read.js';
import { UsageError } from '../../errors.js';
import { normaliseName } from '../../feed/host.js';
import { parseCidr } from '../../net/ipv4.js';
import { escapeControls, terminalSafe } from '../../util/terminal-text.js';
import { loadContext, type GlobalOptions } from '../context.js';
import { isoTime, printJson, table } from '../format.js';
import { parseTime } from '../time-arg.js';

/** The TARGET argument: an IPv4 address or network, else a host name (or a URL, for its host). */
export function parseTarget(value: string, what = 'TARGET'): Target {
  const text = value.trim();
  if (/^[\d./]+$/.test(text)) {
    const r = parseCidr(text);
    if (!r.ok) throw new UsageError(`${what}: ${escapeControls(r.error)}`);
    return { kind: 'addresses', cidr: r.cidr };
  }
  const h = normaliseName(text);
  if (h.kind === 'invalid') throw new UsageError(`${what}: ${JSON.stringify(terminalSafe(value, 100))}: ${h.error}`);
  if (h.kind === 'ipv4') return parseTarget(h.ip, what);
  return { kind: 'names', name: h.name };
}

export const targetText = (t: Target) => (t.kind === 'addresses' ? t.cidr.text : t.name);

const num = (s: number | null) => (s === null ? '-' : s.toFixed(2));
/** A float32 score as the decimal it was (9.899999618530273 -> 9.9). */
const score = (s: number | null) => (s === null ? null : Number(s.toPrecision(7)));

export function eventJson(e: HistoryEvent) {
  return {
    ts: e.ts,
    entry: e.entry,
    change: e.change,
    reason: e.reason,
    score: score(e.score),
    rank: e.rank,
    cause: e.cause,
    ...(e.expires !== undefined ? { expires: e.expires } : {}),
  };
}

function noteJson(n: HistoryNote) {
  return { ts: n.ts, reason: n.reason, cause: n.cause, plugin: n.plugin, text: n.text };
}

/** `history TARGET`: the changes of one address, network or name, oldest first. Reads the history only. */
export async function historyCommand(value: string, opts: GlobalOptions & { since?: string; until?: string; json?: boolean }): Promise<number> {
  const target = parseTarget(value);
  const since = opts.since === undefined ? undefined : parseTime(opts.since, '--since');
  const until = opts.until === undefined ? undefined : parseTime(opts.until, '--until');
  if (since !== undefined && until !== undefined && until < since) throw new UsageError('--until: earlier than --since');
  const { config } = loadContext(opts);
  const r = historyOf(config.state_dir, target, { ...(since !== undefined ? { since } : {}), ...(until !== undefined ? { until } : {}) });
  if (opts.json) {
    await printJson({
      target: targetText(target),
      events: r.events.map(eventJson),
      notes: r.relevantNotes.map(noteJson),
      history: { from: r.oldest ?? null, partial: r.partial, unreadable: r.unreadable },
    });
    return 0;
  }
  const out: string[] = [];
  for (const u of r.unreadable) out.push(`warning: ${escapeControls(u)}: not read`);
  if (r.oldest === undefined) out.push(`${targetText(target)}: ${r.unreadable.length ? 'the change history could not be read' : 'the change history is empty (nothing applied since it began, or history files missing)'}`);
  else {
    const rows = [
      ...r.events.map((e) => ({ ts: e.ts, row: [isoTime(e.ts), escapeControls(e.entry), `${e.change} (${reasonText(e.reason)})`, num(e.score), e.rank === null ? '-' : String(e.rank), e.cause] })),
      ...r.relevantNotes.map((n) => ({ ts: n.ts, row: [isoTime(n.ts), '*', `${reasonText(n.reason)}: ${escapeControls(n.text)}`, '-', '-', n.cause] })),
    ].sort((a, b) => a.ts - b.ts);
    out.push(`${targetText(target)}: ${r.events.length} change${r.events.length === 1 ? '' : 's'} (the history begins at ${isoTime(r.oldest)})`);
    if (rows.length) out.push(table(['time', 'entry', 'change', 'score', 'rank', 'cause'], rows.map((x) => x.row), ['l', 'l', 'l', 'r', 'r', 'l']));
    for (const p of r.partial) out.push(`note: the batch of ${isoTime(p)} was too large for history_max_mb and is kept only in part`);
  }
  process.stdout.write(out.join('\n') + '\n');
  return 0;
}
