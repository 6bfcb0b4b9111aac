import type { Cidr } from '../../net/ipv4.js';
import { toCidr } from '../../net/ipv4.js';
import type { Cause, HistoryReason } from '../state/history/codes.js';
import type { HistoryEvent } from '../state/history/events.js';
import { findInHistory, type HistoryFound, type HistoryNote, type HistoryTarget } from '../state/history/read.js';

/**
 * `history` and `explain --at`: the change history read back for one address, network or
 * name. Read-only: nothing here writes the state or touches the kernel.
 */

export type Target = { readonly kind: 'addresses'; readonly cidr: Cidr } | { readonly kind: 'names'; readonly name: string };

export function historyTargetOf(t: Target): HistoryTarget {
  return t.kind === 'addresses' ? { kind: 'addresses', start: t.cidr.start, end: t.cidr.end } : { kind: 'names', name: t.name };
}

/** What was in force for one entry at a moment, as its changes tell. */
export interface EntryState {
  readonly entry: string;
  readonly inForce: boolean;
  /** Why it was (or why it was not: the reason it left). */
  readonly reason: HistoryReason;
  /** Since when (epoch s); null: since before the history begins. */
  readonly since: number | null;
  readonly score: number | null;
  readonly rank: number | null;
  readonly cause: Cause | null;
  /** In force: when its kernel timeout ends (null = none; undefined = not known). */
  readonly expires?: number | null | undefined;
}

/**
 * One entry's state at `at` from its changes (oldest first). Before its first change the
 * entry was what that change found: out for an addition, in (for the reason it gives as
 * previous) for a removal or an update. An entry in force whose kernel timeout ran out by
 * `at` is out from then, whether or not a later write has recorded it yet.
 */
export function stateAt(entry: string, events: readonly HistoryEvent[], at: number): EntryState {
  const first = events[0];
  let st: EntryState =
    first === undefined || first.change === 'added'
      ? { entry, inForce: false, reason: 'unknown', since: null, score: null, rank: null, cause: null }
      : { entry, inForce: true, reason: first.previous?.reason ?? 'unknown', since: null, score: null, rank: null, cause: null, expires: first.previous ? first.previous.expires : undefined };
  for (const e of events) {
    if (e.ts > at) break;
    st = expired(st, e.ts);
    if (e.change === 'removed') {
      if (st.inForce) st = { entry, inForce: false, reason: e.reason, since: e.ts, score: e.score, rank: e.rank, cause: e.cause };
    } else if (e.change === 'added' || e.change === 'updated') {
      st = { entry, inForce: true, reason: e.reason, since: st.inForce ? st.since : e.ts, score: e.score, rank: e.rank, cause: e.cause, expires: e.expires };
    }
  }
  return expired(st, at);
}

function expired(st: EntryState, at: number): EntryState {
  if (!st.inForce || typeof st.expires !== 'number' || st.expires > at) return st;
  return { entry: st.entry, inForce: false, reason: 'expired', since: st.expires, score: null, rank: null, cause: 'expiry' };
}

/** The events of each entry, in order. */
export function byEntry(events: readonly HistoryEvent[]): Map<string, HistoryEvent[]> {
  const m = new Map<string, HistoryEvent[]>();
  for (const e of events) {
    const list = m.get(e.entry);
    if (list) list.push(e);
    else m.set(e.entry, [e]);
  }
  return m;
}

/** Whether entry `entry` holds all of the target (an address or network in it; the name or one below it). */
export function covers(entry: string, target: Target): boolean {
  if (target.kind === 'names') return entry === target.name || target.name.endsWith(`.${entry}`);
  const c = toCidr(entry);
  return c !== undefined && c.start <= target.cidr.start && target.cidr.end <= c.end;
}

export interface HistoryReport extends HistoryFound {
  /** The notes at moments when an entry of the target was in force (a restore or a repair of the set it was in). */
  readonly relevantNotes: HistoryNote[];
}

/** The changes bearing on `target`, with the notes that concern it, within [since, until]. */
export function historyOf(dir: string, target: Target, range: { since?: number; until?: number } = {}): HistoryReport {
  const found = findInHistory(dir, historyTargetOf(target));
  const entries = byEntry(found.events);
  const within = (ts: number) => (range.since === undefined || ts >= range.since) && (range.until === undefined || ts <= range.until);
  // In force when the note was written: the changes before it, by their order in the history (a second holds several).
  const before = (n: HistoryNote, list: readonly HistoryEvent[]) => list.filter((e) => e.ts < n.ts || (e.ts === n.ts && (e.seq ?? 0) < n.seq));
  const relevantNotes = found.notes.filter((n) => within(n.ts) && [...entries].some(([entry, list]) => stateAt(entry, before(n, list), n.ts).inForce));
  return { ...found, events: found.events.filter((e) => within(e.ts)), relevantNotes };
}

/** An entry in force now (from the applied record or the resolver), for entries the history holds no change of. */
export interface CurrentEntry {
  readonly entry: string;
  readonly reason: HistoryReason;
  readonly expires: number | null;
}

export interface AtVerdict {
  readonly at: number;
  /** Blocked at `at`: an entry holding all of the target was in force; null when the history does not reach back that far. */
  readonly blocked: boolean | null;
  /** The entry that decided (the longest-lived of those in force that hold the target), if blocked. */
  readonly by?: EntryState;
  /** Every entry of the target's that the history knows of, as it stood at `at` (covers: holds all of the target). */
  readonly entries: (EntryState & { readonly covers: boolean })[];
  /** The last change before or at `at` of an entry holding the target. */
  readonly lastChange?: HistoryEvent;
  /** The oldest change the history holds (undefined: it holds none). */
  readonly from: number | undefined;
  /** A batch the history holds only in part lies between `from` and `at`: an entry may be missing. */
  readonly partial: boolean;
  readonly unreadable: readonly string[];
}

/**
 * The verdict for `target` at `at` from the history: each entry overlapping it replayed up
 * to then; an entry in force now with no change in the history (`current`) has been in
 * force since before the history begins. Null when `at` is before the oldest change kept.
 */
export async function verdictAt(dir: string, target: Target, at: number, currentOf: (plugin: string | undefined) => Promise<readonly CurrentEntry[]>): Promise<AtVerdict> {
  const found = findInHistory(dir, historyTargetOf(target));
  const base = { at, from: found.oldest, partial: found.partial.some((p) => p <= at), unreadable: found.unreadable };
  if (found.oldest === undefined || at < found.oldest) return { ...base, blocked: null, entries: [] };
  const current = await currentOf(found.plugin);
  const entries = byEntry(found.events);
  const states = [...entries].map(([entry, list]) => stateAt(entry, list, at));
  for (const c of current) {
    if (!entries.has(c.entry)) states.push({ entry: c.entry, inForce: true, reason: c.reason, since: null, score: null, rank: null, cause: null, expires: c.expires });
  }
  const all = states.map((s) => ({ ...s, covers: covers(s.entry, target) }));
  const holding = all.filter((s) => s.inForce && s.covers);
  const by = holding.reduce<EntryState | undefined>((best, s) => (!best || lasts(s) > lasts(best) ? s : best), undefined);
  const lastChange = found.events.filter((e) => e.ts <= at && covers(e.entry, target)).at(-1);
  return { ...base, blocked: holding.length > 0, ...(by ? { by } : {}), entries: all, ...(lastChange ? { lastChange } : {}) };
}

const lasts = (s: EntryState) => (s.expires === null || s.expires === undefined ? Infinity : s.expires);
