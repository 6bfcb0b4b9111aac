import { fromNumber, parseCidr, toCidr, type Cidr } from '../net/ipv4.js';
import type { FeedItem } from '../api/wire.js';
import { releaseArray, resizeArray } from '../util/release.js';

/** A feed item reduced to what selection needs, keyed by its canonical CIDR. */
export interface Indicator {
  readonly cidr: Cidr;
  /** Epoch seconds of the record (the decay clock starts here). */
  readonly ts: number;
  /** Score at `ts` (S in the decay formula). */
  readonly score: number;
}

export type ToIndicator = { ok: true; indicator: Indicator } | { ok: false; error: string };

/**
 * Parse one validated feed item's address strictly; networks normalised to their network address.
 * `toCidr` answers canonical text (nearly every feed item) without ipaddr.js and falls back to
 * `parseCidr` for anything else, so the result is the same; `parseCidr` also words the error.
 */
export function toIndicator(item: FeedItem): ToIndicator {
  const cidr = toCidr(item.ip);
  if (cidr) return { ok: true, indicator: { cidr, ts: item.ts, score: item.score } };
  const r = parseCidr(item.ip);
  if (!r.ok) return { ok: false, error: r.error };
  return { ok: true, indicator: { cidr: r.cidr, ts: item.ts, score: item.score } };
}

const MIN_CAPACITY = 16;

/** Hash slots for `n` entries: a power of two at least twice `n` (load factor <= 0.5). */
function slotsFor(n: number): number {
  let size = 32;
  while (size < n * 2) size *= 2;
  return size;
}

/**
 * De-duplicating collection: the newest record of an address wins; on equal ts
 * the one seen later in the stream wins (the server's latest word). Iteration
 * follows first insertion, as a Map's would.
 *
 * Stored in columns (typed arrays: network address, prefix, ts, score) with an
 * open-addressing hash of positions over them, not as a Map of objects: a
 * million indicators take ~30 MB instead of ~250 MB and leave no per-item
 * garbage, which is what keeps the agent's memory flat at feed sizes of a
 * million. Indicator objects are made only when asked for (`indicatorAt`,
 * `values`).
 */
export class IndicatorMap implements Iterable<Indicator> {
  private starts: Uint32Array;
  private prefixes: Uint8Array;
  private tss: Float64Array;
  private scores: Float64Array;
  /** Hash slots: position + 1, 0 = empty; linear probing, at most half full. Keys are read from the columns. */
  private slots: Int32Array;
  private count = 0;

  constructor(expected = MIN_CAPACITY) {
    const cap = Math.max(MIN_CAPACITY, Math.ceil(expected));
    this.starts = new Uint32Array(cap);
    this.prefixes = new Uint8Array(cap);
    this.tss = new Float64Array(cap);
    this.scores = new Float64Array(cap);
    this.slots = new Int32Array(slotsFor(cap));
  }

  /** The slot holding this key, or the empty slot where it would go. */
  private slotOf(start: number, prefix: number): number {
    if (this.slots.length === 0) this.rehash(slotsFor(this.count + 1));
    const slots = this.slots;
    const mask = slots.length - 1;
    let h = Math.imul(start ^ Math.imul(prefix + 1, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 15;
    let i = h & mask;
    for (;;) {
      const v = slots[i]!;
      if (v === 0 || (this.starts[v - 1] === start && this.prefixes[v - 1] === prefix)) return i;
      i = (i + 1) & mask;
    }
  }

  upsert(ind: Indicator): void {
    this.upsertParts(ind.cidr.start, ind.cidr.prefix, ind.ts, ind.score);
  }

  /** `upsert` from the parts of an indicator (`start` must be the network address of a canonical CIDR). */
  upsertParts(start: number, prefix: number, ts: number, score: number): void {
    this.put(start, prefix, ts, score, true);
  }

  /** Store unconditionally: the last record of an address wins whatever its ts (a plain Map's `set`). */
  setParts(start: number, prefix: number, ts: number, score: number): void {
    this.put(start, prefix, ts, score, false);
  }

  private put(start: number, prefix: number, ts: number, score: number, newestWins: boolean): void {
    const slot = this.slotOf(start, prefix);
    const at = this.slots[slot]! - 1;
    if (at !== -1) {
      if (!newestWins || ts >= this.tss[at]!) {
        this.tss[at] = ts;
        this.scores[at] = score;
      }
      return;
    }
    if (this.count === this.starts.length) this.growColumns();
    const i = this.count++;
    this.starts[i] = start;
    this.prefixes[i] = prefix;
    this.tss[i] = ts;
    this.scores[i] = score;
    if (this.count * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    else this.slots[slot] = i + 1;
  }

  /** 1.5x, not 2x: at a million entries the spare room is what costs memory. */
  private growColumns(): void {
    this.resize(Math.ceil(this.starts.length * 1.5));
  }

  /** Columns with room for `cap` (>= size) records, moved by `transfer`: the old memory is freed at once (see resizeArray). */
  private resize(cap: number): void {
    this.starts = resizeArray(this.starts, cap, (b) => new Uint32Array(b));
    this.prefixes = resizeArray(this.prefixes, cap, (b) => new Uint8Array(b));
    this.tss = resizeArray(this.tss, cap, (b) => new Float64Array(b));
    this.scores = resizeArray(this.scores, cap, (b) => new Float64Array(b));
  }

  /** `size` slots (a power of two), every position hashed again. */
  private rehash(size: number): void {
    releaseArray(this.slots);
    this.slots = new Int32Array(size);
    for (let i = 0; i < this.count; i++) this.slots[this.slotOf(this.starts[i]!, this.prefixes[i]!)] = i + 1;
  }

  /**
   * Once a pull is complete: columns sized to the records (no spare room) and the hash slots
   * freed (8 MB at a million); `find` and the writers rebuild the slots if they are asked again.
   */
  compact(): void {
    if (this.starts.length > Math.max(MIN_CAPACITY, this.count)) this.resize(Math.max(MIN_CAPACITY, this.count));
    releaseArray(this.slots);
    this.slots = new Int32Array(0);
  }

  /** Free the columns now, not at the next collection: for the owner once nothing reads the map again (it is empty afterwards). */
  release(): void {
    for (const a of [this.starts, this.prefixes, this.tss, this.scores, this.slots]) releaseArray(a);
    this.count = 0;
    this.starts = new Uint32Array(MIN_CAPACITY);
    this.prefixes = new Uint8Array(MIN_CAPACITY);
    this.tss = new Float64Array(MIN_CAPACITY);
    this.scores = new Float64Array(MIN_CAPACITY);
    this.slots = new Int32Array(0);
  }

  get size(): number {
    return this.count;
  }

  /** Position of an address or network (0..size-1, in first-insertion order), or -1. */
  find(start: number, prefix: number): number {
    const slot = this.slotOf(start, prefix);
    return this.slots[slot]! - 1;
  }

  tsAt(i: number): number {
    return this.tss[i]!;
  }

  scoreAt(i: number): number {
    return this.scores[i]!;
  }

  indicatorAt(i: number): Indicator {
    return { cidr: fromNumber(this.starts[i]!, this.prefixes[i]!), ts: this.tss[i]!, score: this.scores[i]! };
  }

  *values(): IterableIterator<Indicator> {
    for (let i = 0; i < this.count; i++) yield this.indicatorAt(i);
  }

  [Symbol.iterator](): IterableIterator<Indicator> {
    return this.values();
  }

  /** The contents as a Map keyed by CIDR text (built on each call: for tests and debugging, not hot paths). */
  get byCidr(): ReadonlyMap<string, Indicator> {
    const m = new Map<string, Indicator>();
    for (const ind of this.values()) m.set(ind.cidr.text, ind);
    return m;
  }

  /** Views of the columns, positions 0..size-1, not copies: for reading a whole feed fast (selection, the cache file). Do not write to them. */
  columns(): { starts: Uint32Array; prefixes: Uint8Array; tss: Float64Array; scores: Float64Array } {
    const n = this.count;
    return { starts: this.starts.subarray(0, n), prefixes: this.prefixes.subarray(0, n), tss: this.tss.subarray(0, n), scores: this.scores.subarray(0, n) };
  }

  /** `upsert` every record of `other`, in its order. */
  merge(other: IndicatorMap): void {
    for (let i = 0; i < other.count; i++) this.upsertParts(other.starts[i]!, other.prefixes[i]!, other.tss[i]!, other.scores[i]!);
  }
}
