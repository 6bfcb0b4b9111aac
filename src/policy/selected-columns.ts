import { fromNumber } from '../net/ipv4.js';
import { REASONS, REASON_CODE, type ExplainedRecord, type Reason, type SelectedEntry, type SkipReason } from './types.js';
import { networkOf, ScoreEntry } from './score-entry.js';

/**
 * Selected entries as columns, in selection order: 22 bytes an entry instead
 * of an object with its network, reason and boxed numbers (about 100 bytes as
 * a score entry, 200 as a plain one). The selection is built in this form, the
 * daemon's cycle turns it into firewall columns without an object per entry,
 * and keeps it between cycles as the base the local overrides start from.
 * Entries are made only where they are used (`plan`, `explain`, the overrides
 * when some are in force).
 */
export class SelectedColumns {
  readonly starts: Uint32Array;
  readonly prefixes: Uint8Array;
  private readonly reasons: Uint8Array;
  /** NaN = null. */
  private readonly scores: Float64Array;
  /** NaN = null. */
  private readonly expires: Float64Array;
  private count = 0;

  /** Room for `capacity` entries, allocated once: the selection knows its size before it fills it. */
  constructor(capacity: number) {
    const n = Math.max(0, capacity);
    this.starts = new Uint32Array(n);
    this.prefixes = new Uint8Array(n);
    this.reasons = new Uint8Array(n);
    this.scores = new Float64Array(n);
    this.expires = new Float64Array(n);
  }

  static of(entries: readonly SelectedEntry[]): SelectedColumns {
    const c = new SelectedColumns(entries.length);
    for (const e of entries) {
      const { start, prefix } = networkOf(e);
      c.push(start, prefix, e.reason, e.score, e.expiresAt);
    }
    return c;
  }

  /** Up to the capacity given to the constructor (past it the typed arrays drop the values: a bug, so it throws). */
  push(start: number, prefix: number, reason: Reason, score: number | null, expiresAt: number | null): void {
    const i = this.count;
    if (i === this.starts.length) throw new RangeError(`SelectedColumns: more than the ${i} entries it was sized for`);
    this.count++;
    this.starts[i] = start;
    this.prefixes[i] = prefix;
    this.reasons[i] = REASON_CODE[reason];
    this.scores[i] = score ?? NaN;
    this.expires[i] = expiresAt ?? NaN;
  }

  get length(): number {
    return this.count;
  }

  reason(i: number): Reason {
    return REASONS[this.reasons[i]!]!;
  }

  score(i: number): number | null {
    const s = this.scores[i]!;
    return Number.isNaN(s) ? null : s;
  }

  expiresAt(i: number): number | null {
    const e = this.expires[i]!;
    return Number.isNaN(e) ? null : e;
  }

  /** Entry `i` as an object (a score entry makes its Cidr only when asked). */
  entry(i: number): SelectedEntry {
    const reason = this.reason(i);
    const score = this.score(i);
    if (reason === 'score' && score !== null) return new ScoreEntry(this.starts[i]!, this.prefixes[i]!, score, this.expiresAt(i));
    return { cidr: fromNumber(this.starts[i]!, this.prefixes[i]!), reason, score, expiresAt: this.expiresAt(i) };
  }

  toEntries(): SelectedEntry[] {
    const out: SelectedEntry[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.entry(i));
    return out;
  }

  /** The first `n` entries (a copy of them), or this when it holds no more than `n`. */
  first(n: number): SelectedColumns {
    if (this.count <= n) return this;
    const c = new SelectedColumns(n);
    c.starts.set(this.starts.subarray(0, n));
    c.prefixes.set(this.prefixes.subarray(0, n));
    c.reasons.set(this.reasons.subarray(0, n));
    c.scores.set(this.scores.subarray(0, n));
    c.expires.set(this.expires.subarray(0, n));
    c.count = n;
    return c;
  }
}

/**
 * A selection held as columns: `entries` is made on first use and kept (plan
 * and explain read it several times); the daemon's cycle reads `columns` only,
 * so a million entries never become objects there.
 */
class ColumnSelection implements Selection {
  private made: SelectedEntry[] | undefined;

  constructor(
    readonly columns: SelectedColumns,
    readonly skipped: Record<SkipReason, number>,
    readonly explained?: ExplainedRecord[],
    readonly cut?: CutScores,
  ) {}

  get entries(): SelectedEntry[] {
    return (this.made ??= this.columns.toEntries());
  }
}

export function selectionOf(columns: SelectedColumns, skipped: Record<SkipReason, number>, explained?: ExplainedRecord[], cut?: CutScores): Selection {
  return new ColumnSelection(columns, skipped, explained, cut);
}

/** The decayed scores of what passed every check but the cap, best first; the first of them would have had rank `firstRank`. */
export interface CutScores {
  readonly firstRank: number;
  readonly scores: Float32Array;
}

/** The rank a score entry left out by the cap would have had: after every cut score above it. */
export function rankOfCut(cut: CutScores, score: number): number {
  const s = cut.scores;
  let lo = 0;
  let hi = s.length;
  // Math.fround: the scores are kept as 32-bit floats.
  const x = Math.fround(score);
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (s[mid]! > x) lo = mid + 1;
    else hi = mid;
  }
  return cut.firstRank + lo;
}

export interface Selection {
  /** What is selected, in order, as columns: what the cycle applies. */
  readonly columns: SelectedColumns;
  /** The same entries as objects, made on first use (plan, explain): a million of them cost ~100 MB. */
  readonly entries: SelectedEntry[];
  readonly skipped: Record<SkipReason, number>;
  /** Only with `explainFor`: every manual block, then every feed record, overlapping it. */
  readonly explained?: ExplainedRecord[];
  /** Made by selectEntries: what the cap left out (the change history ranks an entry that left for it). */
  readonly cut?: CutScores;
}
