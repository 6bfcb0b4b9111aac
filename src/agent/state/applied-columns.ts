import { EntryColumns, timeoutUntil } from '../../firewall/index.js';
import { TextBuilder } from '../../util/text-builder.js';
import { REASONS, REASON_CODE, type Reason } from '../../policy/types.js';
import type { SelectedColumns } from '../../policy/selected-columns.js';
import type { AppliedEntry } from './applied-entry.js';

const SCRATCH = new TextBuilder(32);

/**
 * What a cycle applied, as columns: the applied-set record, the cycle's
 * counts and the state report read it from here. As objects (each with its
 * CIDR text and a boxed expiry) a million cost ~150 MB for the rest of the
 * cycle; as columns 14 MB, and the text is made only where it is written.
 */
export class AppliedColumns {
  starts: Uint32Array;
  prefixes: Uint8Array;
  private reasons: Uint8Array;
  /** Epoch seconds; NaN = no expiry. */
  private expires: Float64Array;
  /** The decayed score at the apply (NaN = none), made only by a write that knows it (the change history reads it). */
  private scores: Float32Array | undefined;
  length = 0;

  constructor(capacity: number) {
    const n = Math.max(1, capacity);
    this.starts = new Uint32Array(n);
    this.prefixes = new Uint8Array(n);
    this.reasons = new Uint8Array(n);
    this.expires = new Float64Array(n);
  }

  /** Past the capacity given to the constructor, the columns double (a record read back whose size was not known). */
  push(start: number, prefix: number, reason: Reason, expiresAt: number | null, score?: number | null): void {
    if (this.length === this.starts.length) this.grow(this.length * 2);
    const i = this.length++;
    this.starts[i] = start;
    this.prefixes[i] = prefix;
    this.reasons[i] = REASON_CODE[reason];
    this.expires[i] = expiresAt ?? NaN;
    if (score !== undefined && score !== null) (this.scores ??= new Float32Array(this.starts.length).fill(NaN))[i] = score;
    else if (this.scores) this.scores[i] = NaN;
  }

  /** The decayed score the entry was applied with, when the write knew it. */
  score(i: number): number | null {
    const s = this.scores?.[i];
    return s === undefined || Number.isNaN(s) ? null : s;
  }

  /** The CIDR text as one flat string (the report holds a million of them: a template's rope of pieces costs half as much again). */
  text(i: number): string {
    return SCRATCH.reset().cidr(this.starts[i]!, this.prefixes[i]!).latin1();
  }

  reason(i: number): Reason {
    return REASONS[this.reasons[i]!]!;
  }

  expiresAt(i: number): number | null {
    const e = this.expires[i]!;
    return Number.isNaN(e) ? null : e;
  }

  entry(i: number): AppliedEntry {
    return { cidr: this.text(i), reason: this.reason(i), expiresAt: this.expiresAt(i) };
  }

  private grow(capacity: number): void {
    const starts = new Uint32Array(capacity);
    starts.set(this.starts);
    const prefixes = new Uint8Array(capacity);
    prefixes.set(this.prefixes);
    const reasons = new Uint8Array(capacity);
    reasons.set(this.reasons);
    const expires = new Float64Array(capacity);
    expires.set(this.expires);
    let scores: Float32Array | undefined;
    if (this.scores) {
      scores = new Float32Array(capacity).fill(NaN);
      scores.set(this.scores);
    }
    Object.assign(this, { starts, prefixes, reasons, expires, scores });
  }
}

/** What was applied: columns (a cycle's apply) or entries (read back from the record). */
export type AppliedList = AppliedColumns | readonly AppliedEntry[];

export function appliedEntryAt(list: AppliedList, i: number): AppliedEntry {
  return list instanceof AppliedColumns ? list.entry(i) : list[i]!;
}

/**
 * The entries of `columns` not expired by `now` (epoch seconds), as columns: what a failed cycle
 * reports as still applied, without an object per entry (at a million the record read back as
 * objects cost the failing cycle ~400 MB).
 */
export function liveColumns(columns: AppliedColumns | undefined, now: number): AppliedColumns {
  const out = new AppliedColumns(columns?.length ?? 0);
  if (!columns) return out;
  for (let i = 0; i < columns.length; i++) {
    const expires = columns.expiresAt(i);
    if (expires === null || expires > now) out.push(columns.starts[i]!, columns.prefixes[i]!, columns.reason(i), expires, columns.score(i));
  }
  return out;
}

export function countByReason(list: AppliedList): Record<Reason, number> {
  const out: Record<Reason, number> = { manual: 0, url: 0, score: 0, local: 0 };
  if (list instanceof AppliedColumns) for (let i = 0; i < list.length; i++) out[list.reason(i)]++;
  else for (const e of list) out[e.reason]++;
  return out;
}

/**
 * What the apply at `now` sends: the selected entries not expired by then, as firewall columns
 * (kernel timeouts counted from `now`), and as the applied-set record keeps them. One pass, no
 * copy of the selection and no object per entry for the firewall.
 */
export function toApplied(selected: SelectedColumns, now: number): { firewall: EntryColumns; applied: AppliedColumns } {
  const n = selected.length;
  const firewall = new EntryColumns(n);
  const applied = new AppliedColumns(n);
  const { starts, prefixes } = selected;
  for (let i = 0; i < n; i++) {
    const expiresAt = selected.expiresAt(i);
    if (expiresAt !== null && expiresAt <= now) continue;
    firewall.push(starts[i]!, prefixes[i]!, timeoutUntil(expiresAt, now));
    applied.push(starts[i]!, prefixes[i]!, selected.reason(i), expiresAt, selected.score(i));
  }
  return { firewall, applied };
}
