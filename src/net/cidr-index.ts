import { fromNumber, type Cidr } from './ipv4.js';
import { releaseArray } from '../util/release.js';

/**
 * Open-addressing hash from a CIDR (network address + prefix) to an array
 * index, in typed arrays: no allocation per entry. A Map keyed by CIDR text
 * costs ~0.5 s and a lot of garbage for a million entries; this costs tens of
 * milliseconds. Sized once for the expected count (load factor <= 0.5).
 */
export class CidrIndex {
  private readonly starts: Uint32Array;
  private readonly prefixes: Uint8Array;
  /** index + 1; 0 = empty slot. */
  private readonly values: Int32Array;
  private readonly mask: number;

  constructor(expected: number) {
    let size = 16;
    while (size < expected * 2) size *= 2;
    this.starts = new Uint32Array(size);
    this.prefixes = new Uint8Array(size);
    this.values = new Int32Array(size);
    this.mask = size - 1;
  }

  private slot(start: number, prefix: number): number {
    let h = Math.imul(start ^ Math.imul(prefix + 1, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 15;
    let i = h & this.mask;
    while (this.values[i] !== 0 && (this.starts[i] !== start || this.prefixes[i] !== prefix)) i = (i + 1) & this.mask;
    return i;
  }

  /** The index stored for this CIDR, or -1. */
  get(start: number, prefix: number): number {
    return this.values[this.slot(start, prefix)]! - 1;
  }

  /** Store `index` unless the CIDR is present; returns the index already stored, or -1 when inserted. */
  add(start: number, prefix: number, index: number): number {
    const i = this.slot(start, prefix);
    const existing = this.values[i]!;
    if (existing !== 0) return existing - 1;
    this.starts[i] = start;
    this.prefixes[i] = prefix;
    this.values[i] = index + 1;
    return -1;
  }

  /** Free the slots now, not at the next collection (about 19 MB for a million entries); the index is unusable afterwards. */
  release(): void {
    releaseArray(this.starts);
    releaseArray(this.prefixes);
    releaseArray(this.values);
  }
}

/** Smallest list of CIDRs covering exactly [start, end] (unsigned 32-bit). */
export function rangeToCidrs(start: number, end: number): Cidr[] {
  const out: Cidr[] = [];
  let cur = start;
  while (cur <= end) {
    // Largest aligned block starting at `cur`...
    let size = cur === 0 ? 2 ** 32 : ((cur | 0) & -(cur | 0)) >>> 0;
    // ...that does not run past `end`.
    while (size > end - cur + 1) size /= 2;
    out.push(fromNumber(cur, 32 - Math.log2(size)));
    cur += size;
  }
  return out;
}
