import type { CidrList } from '../../api/wire.js';
import { AppliedColumns, type AppliedList } from '../state/applied-columns.js';

/**
 * The state report's `blacklist`, bounded in bytes: at 100,000 applied entries the full list
 * is 1.6 MB, and a server behind a 1 MiB body limit (nginx's default) refuses every report,
 * so the platform never learns the host's state. Manual (and local) entries go first, then the
 * others in the selection's order (score, highest first), until the budget is spent.
 */
export interface CappedList {
  list: CidrList;
  /** Entries in `list`. */
  entries: number;
  /** Entries applied. */
  total: number;
  /** Bytes `list` takes in the report's JSON (each entry quoted, with its comma). */
  bytes: number;
}

/** Digits of 0..255 (and of a prefix length). */
function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : 3;
}

/** Length of a network's text as the report writes it ("a.b.c.d", "/n" unless /32), plus its quotes and comma. */
export function reportEntryBytes(start: number, prefix: number): number {
  const len = digits(start >>> 24) + digits((start >>> 16) & 255) + digits((start >>> 8) & 255) + digits(start & 255) + 3;
  return len + (prefix === 32 ? 0 : 1 + digits(prefix)) + 3;
}

const isFirst = (reason: string) => reason === 'manual' || reason === 'local';

/** The applied list within `maxBytes` (the list's own bytes); the list itself when it fits. */
export function capReportList(current: AppliedList, maxBytes: number): CappedList {
  const n = current.length;
  const cols = current instanceof AppliedColumns ? current : undefined;
  const texts = cols ? undefined : (current as Exclude<AppliedList, AppliedColumns>);
  const size = (i: number) => (cols ? reportEntryBytes(cols.starts[i]!, cols.prefixes[i]!) : texts![i]!.cidr.length + 3);
  const first = (i: number) => isFirst(cols ? cols.reason(i) : texts![i]!.reason);
  let all = 0;
  for (let i = 0; i < n; i++) all += size(i);
  const whole = cols ?? texts!.map((e) => e.cidr);
  if (all <= maxBytes) return { list: whole, entries: n, total: n, bytes: all };

  const picked: number[] = [];
  let bytes = 0;
  let full = false;
  // Two passes in the list's order: manual and local entries, then the rest, until one does not fit.
  for (const pass of [true, false]) {
    for (let i = 0; i < n && !full; i++) {
      if (first(i) !== pass) continue;
      const b = size(i);
      if (bytes + b > maxBytes) full = true;
      else {
        bytes += b;
        picked.push(i);
      }
    }
  }
  if (cols) {
    const starts = new Uint32Array(picked.length);
    const prefixes = new Uint8Array(picked.length);
    picked.forEach((i, k) => {
      starts[k] = cols.starts[i]!;
      prefixes[k] = cols.prefixes[i]!;
    });
    return { list: { length: picked.length, starts, prefixes }, entries: picked.length, total: n, bytes };
  }
  return { list: picked.map((i) => texts![i]!.cidr), entries: picked.length, total: n, bytes };
}
