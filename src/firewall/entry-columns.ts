import { FirewallError } from '../errors.js';
import { fromNumber, numberToIp, type Cidr } from '../net/ipv4.js';
import { releaseArray, resizeArray } from '../util/release.js';
import type { FirewallEntry } from './entry.js';

/**
 * Entries to block as columns: network address, prefix length and timeout,
 * one typed array each. At a million entries an object per entry (with its
 * Cidr, its text and two boxed numbers) cost about 200 bytes; these columns
 * cost 13. The selection hands the firewall its entries in this form, and
 * the backends read them by position; a list of FirewallEntry objects (tests,
 * small callers) is turned into columns at the top of an apply.
 */
export class EntryColumns {
  starts: Uint32Array;
  prefixes: Uint8Array;
  /** Seconds until the kernel drops the entry; NaN = no timeout. */
  timeouts: Float64Array;
  length = 0;

  constructor(capacity = 16) {
    const n = Math.max(1, capacity);
    this.starts = new Uint32Array(n);
    this.prefixes = new Uint8Array(n);
    this.timeouts = new Float64Array(n);
  }

  /** From a list of entries; a NaN timeout throws FirewallError naming the entry (before any command runs). */
  static from(entries: Iterable<FirewallEntry>, count = 16): EntryColumns {
    const out = new EntryColumns(count);
    let i = 0;
    for (const e of entries) {
      if (Number.isNaN(e.timeoutSeconds)) throw new FirewallError(`refusing to apply entry ${i} (${e.cidr.text}): timeout is not a number`);
      out.push(e.cidr.start, e.cidr.prefix, e.timeoutSeconds);
      i++;
    }
    return out;
  }

  /** `start` must be a network address of `prefix` (a Cidr's start): nothing is re-checked here. */
  push(start: number, prefix: number, timeoutSeconds: number | undefined): void {
    if (this.length === this.starts.length) this.grow(this.length * 2);
    const i = this.length++;
    this.starts[i] = start;
    this.prefixes[i] = prefix;
    this.timeouts[i] = timeoutSeconds === undefined ? NaN : timeoutSeconds;
  }

  private grow(capacity: number): void {
    this.starts = resizeArray(this.starts, capacity, (b) => new Uint32Array(b));
    this.prefixes = resizeArray(this.prefixes, capacity, (b) => new Uint8Array(b));
    this.timeouts = resizeArray(this.timeouts, capacity, (b) => new Float64Array(b));
  }

  /**
   * Free the columns' memory now (see releaseArray); they are empty afterwards. For the owner of
   * columns nothing else reads any more, such as a kernel listing once it is compared.
   */
  release(): void {
    releaseArray(this.starts);
    releaseArray(this.prefixes);
    releaseArray(this.timeouts);
    this.starts = new Uint32Array(1);
    this.prefixes = new Uint8Array(1);
    this.timeouts = new Float64Array(1);
    this.length = 0;
  }

  /** Last address of entry `i` (its network's broadcast address), as a number. */
  endAt(i: number): number {
    const p = this.prefixes[i]!;
    return p === 0 ? 0xffffffff : (this.starts[i]! + 2 ** (32 - p) - 1) >>> 0;
  }

  /** The entries `keep(i)` says yes to, in order, as new columns (this one unchanged). */
  filter(keep: (i: number) => boolean): EntryColumns {
    const out = new EntryColumns(this.length);
    for (let i = 0; i < this.length; i++) if (keep(i)) out.push(this.starts[i]!, this.prefixes[i]!, this.timeoutAt(i));
    return out;
  }

  timeoutAt(i: number): number | undefined {
    const t = this.timeouts[i]!;
    return Number.isNaN(t) ? undefined : t;
  }

  cidr(i: number): Cidr {
    return fromNumber(this.starts[i]!, this.prefixes[i]!);
  }

  /** Canonical text of entry `i` (`a.b.c.d`, `a.b.c.0/24`). */
  text(i: number): string {
    const p = this.prefixes[i]!;
    return p === 32 ? numberToIp(this.starts[i]!) : `${numberToIp(this.starts[i]!)}/${p}`;
  }

  /** The canonical texts, in order (logs, small lists and tests). */
  texts(): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.length; i++) out.push(this.text(i));
    return out;
  }

  /** As objects (small lists, repairs and tests). */
  toArray(): FirewallEntry[] {
    const out: FirewallEntry[] = [];
    for (let i = 0; i < this.length; i++) out.push({ cidr: this.cidr(i), timeoutSeconds: this.timeoutAt(i) });
    return out;
  }
}

/** What an apply takes: columns, or a list of entries (turned into columns at the top of the apply). */
export type FirewallEntries = EntryColumns | readonly FirewallEntry[];

export function asColumns(entries: FirewallEntries): EntryColumns {
  return entries instanceof EntryColumns ? entries : EntryColumns.from(entries, entries.length);
}
