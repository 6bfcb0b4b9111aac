import { fromNumber } from '../../../net/ipv4.js';
import { FLAG_PARTIAL, noteText, unpack, type Block, type Unpacked } from './block.js';
import { CHANGES, HISTORY_REASONS, type Cause, type HistoryReason } from './codes.js';
import { causeOf, expiryOf, NO_CAUSE, NO_PREVIOUS, scoreOf, type HistoryEvent } from './events.js';
import { eachHistoryFile } from './files.js';

/** What a search looks for: an address or network (its range), or a name. */
export type HistoryTarget = { readonly kind: 'addresses'; readonly start: number; readonly end: number } | { readonly kind: 'names'; readonly name: string };

/** A note about a whole set (a restore, a repair). */
export interface HistoryNote {
  readonly ts: number;
  readonly cause: Cause;
  readonly reason: HistoryReason;
  readonly text: string;
  readonly plugin: string;
  /** The place of its block in the history (see HistoryEvent.seq). */
  readonly seq: number;
}

export interface HistoryFound {
  /** Changes of the entries that overlap the target (an address: the networks that covered it; a network or name: what lies inside it too), oldest first. */
  readonly events: HistoryEvent[];
  /** Notes about the whole set of addresses, oldest first. */
  readonly notes: HistoryNote[];
  /** Epoch s of the oldest change the history holds (undefined: it holds none). */
  readonly oldest: number | undefined;
  /** Times of batches the history holds only in part (too large for history_max_mb). */
  readonly partial: number[];
  /** The firewall backend of the newest batch of addresses (whose applied record says what is enforced now). */
  readonly plugin: string | undefined;
  /** History files that could not be read (named, with why). */
  readonly unreadable: string[];
  /** Bytes read. */
  readonly bytes: number;
}

/**
 * Every change of the history that bears on `target`, file by file (one file's bytes at a
 * time, read as any state file is: no link followed, regular files only): the target columns
 * of each block are scanned as they lie in the file, and only a block that holds a match is
 * unpacked.
 */
export function findInHistory(dir: string, target: HistoryTarget): HistoryFound {
  const events: HistoryEvent[] = [];
  const notes: HistoryNote[] = [];
  const partial: number[] = [];
  let oldest: number | undefined;
  let plugin: string | undefined;
  let bytes = 0;
  let seq = 0;
  const unreadable = eachHistoryFile(dir, (blocks, size) => {
    bytes += size;
    for (const b of blocks) {
      seq++;
      // Not always the first block: a cycle's blocks of addresses and of names are each stamped
      // by the step that made them, so a later block may hold an earlier second (seen in CI:
      // `explain NAME --at` the name's own addition answered "before the history").
      oldest = oldest === undefined ? b.ts : Math.min(oldest, b.ts);
      if (b.flags & FLAG_PARTIAL) partial.push(b.ts);
      if (b.kind === 'note') {
        if (target.kind === 'addresses') notes.push({ ts: b.ts, cause: b.cause, reason: HISTORY_REASONS[b.noteReason] ?? 'unknown', text: noteText(b), plugin: b.plugin, seq });
        continue;
      }
      if (b.kind === 'addresses') plugin = b.plugin;
      if (b.kind !== target.kind) continue;
      const hits = target.kind === 'addresses' ? addressHits(b, target) : nameHits(b, target.name);
      if (hits.length) collect(b, hits, events, seq);
    }
  });
  // Blocks are in the order written; an expiry is stamped with its own (earlier) time.
  events.sort((a, b) => a.ts - b.ts);
  // A change may be stamped before the block that holds it (a cycle's changes carry its start, the
  // block the time it was written, a second later at times): the history reaches back to it.
  if (events.length > 0 && (oldest === undefined || events[0]!.ts < oldest)) oldest = events[0]!.ts;
  return { events, notes, oldest, partial, plugin, unreadable, bytes };
}

/** Positions in block `b` of the networks that overlap [start, end] (CIDRs overlap only by one holding the other). */
function addressHits(b: Block, t: { start: number; end: number }): number[] {
  const starts = b.starts!;
  const prefixes = b.prefixes!;
  const hits: number[] = [];
  for (let i = 0; i < b.count; i++) {
    const s = starts[i]!;
    if (s > t.end) continue;
    if (s + 2 ** (32 - prefixes[i]!) - 1 >= t.start) hits.push(i);
  }
  return hits;
}

/** Positions of the name, the names above it (which cover it at the resolver) and those below it. */
function nameHits(b: Block, name: string): number[] {
  const text = b.names!.toString('latin1');
  const labels = name.split('.');
  const parents = labels.slice(1).map((_, i) => labels.slice(i + 1).join('.'));
  if (!text.includes(name) && !parents.some((p) => text.includes(p))) return [];
  const wanted = new Set([name, ...parents]);
  const below = `.${name}`;
  const hits: number[] = [];
  text.split('\n').forEach((n, i) => {
    if (wanted.has(n) || n.endsWith(below)) hits.push(i);
  });
  return hits.filter((i) => i < b.count);
}

function collect(b: Block, hits: readonly number[], out: HistoryEvent[], seq: number): void {
  const u = unpack(b);
  if (!u) return; // damaged inside a sound CRC: cannot happen by accident; ignored like a torn block
  const names = b.kind === 'names' ? b.names!.toString('latin1').split('\n') : undefined;
  for (const i of hits) out.push({ ...eventAt(b, u, i, names ? names[i]! : fromNumber(b.starts![i]!, b.prefixes![i]!).text), seq });
}

function eventAt(b: Block, u: Unpacked, i: number, entry: string): HistoryEvent {
  const code = u.codes[i]!;
  const prev = u.prev[i]!;
  const cause = u.causes[i]!;
  const expires = expiryOf(u.expires[i]!);
  return {
    ts: u.ts[i]!,
    entry,
    change: CHANGES[code >> 6] ?? 'updated',
    reason: HISTORY_REASONS[code & 0x3f] ?? 'unknown',
    score: scoreOf(u.scores[i]!),
    rank: u.ranks[i] === 0 ? null : u.ranks[i]!,
    cause: cause === NO_CAUSE ? b.cause : causeOf(cause),
    ...(expires !== undefined ? { expires } : {}),
    ...(prev !== NO_PREVIOUS ? { previous: { reason: HISTORY_REASONS[prev] ?? 'unknown', expires: expiryOf(u.prevExpires[i]!) ?? null } } : {}),
  };
}
