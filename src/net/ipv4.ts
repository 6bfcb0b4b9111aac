import { isIPv4 } from 'node:net';
import ipaddr from 'ipaddr.js';

/** An IPv4 address or network, normalised to its network address. */
export interface Cidr {
  /** Canonical text: `a.b.c.d` for a /32, `a.b.c.0/24` for a network. */
  readonly text: string;
  /** Network address as an unsigned 32-bit number. */
  readonly start: number;
  /** Last address covered, unsigned. */
  readonly end: number;
  readonly prefix: number;
}

export type ParseResult = { ok: true; cidr: Cidr } | { ok: false; error: string };

/**
 * Strict IPv4 / CIDR parser. `net.isIPv4` runs first because ipaddr.js alone
 * accepts `127.1` and reads `010.1.1.1` as octal; ipaddr.js then does the
 * prefix maths. Host bits are cleared (`10.1.2.3/8` becomes `10.0.0.0/8`).
 */
export function parseCidr(input: string): ParseResult {
  if (typeof input !== 'string' || input.length > 18) return { ok: false, error: `not an IPv4 address or network: ${JSON.stringify(String(input).slice(0, 40))}` };
  const slash = input.indexOf('/');
  const addr = slash === -1 ? input : input.slice(0, slash);
  if (!isIPv4(addr)) return { ok: false, error: `not an IPv4 address: ${JSON.stringify(input)}` };
  let prefix = 32;
  if (slash !== -1) {
    const p = input.slice(slash + 1);
    if (!/^(?:[0-9]|[12][0-9]|3[0-2])$/.test(p)) return { ok: false, error: `bad prefix length in ${JSON.stringify(input)} (0..32)` };
    prefix = Number(p);
  }
  const bytes = ipaddr.IPv4.parse(addr).toByteArray();
  const value = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  return { ok: true, cidr: fromNumber(value, prefix) };
}

/** Build a Cidr from a number and prefix, clearing host bits. */
export function fromNumber(value: number, prefix: number): Cidr {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const start = (value & mask) >>> 0;
  const end = (start | (~mask >>> 0)) >>> 0;
  const text = prefix === 32 ? numberToIp(start) : `${numberToIp(start)}/${prefix}`;
  return { text, start, end, prefix };
}

export function numberToIp(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Parse or throw with a message naming `field`. */
export function mustParseCidr(input: string, field: string): Cidr {
  const r = parseCidr(input);
  if (!r.ok) throw new Error(`${field}: ${r.error}`);
  return r.cidr;
}

export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.start <= b.end && b.start <= a.end;
}

/** Ascending order by network address, then by prefix (wider first). */
export function compareCidr(a: Cidr, b: Cidr): number {
  return a.start - b.start || a.prefix - b.prefix;
}

/**
 * A set of address ranges answering "does this network overlap any of them?" in
 * O(log n): ranges are sorted and merged once, then binary-searched.
 */
export class RangeSet {
  private readonly starts: Float64Array;
  private readonly ends: Float64Array;

  constructor(ranges: Iterable<{ start: number; end: number }>) {
    const sorted = [...ranges].sort((a, b) => a.start - b.start);
    const starts: number[] = [];
    const ends: number[] = [];
    for (const r of sorted) {
      const last = ends.length - 1;
      if (last >= 0 && r.start <= ends[last]! + 1) {
        if (r.end > ends[last]!) ends[last] = r.end;
      } else {
        starts.push(r.start);
        ends.push(r.end);
      }
    }
    this.starts = Float64Array.from(starts);
    this.ends = Float64Array.from(ends);
  }

  get size(): number {
    return this.starts.length;
  }

  overlaps(c: { start: number; end: number }): boolean {
    // Find the last range whose start <= c.end; it overlaps iff its end >= c.start.
    let lo = 0;
    let hi = this.starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (this.starts[mid]! <= c.end) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return found !== -1 && this.ends[found]! >= c.start;
  }
}

function slowCidr(text: string): Cidr | undefined {
  const r = parseCidr(text);
  return r.ok ? r.cidr : undefined;
}

/**
 * Parse CIDR text. Canonical input (what this module produces: no leading
 * zeros, host bits clear, no `/32`) takes a fast path that reuses the string;
 * anything else goes through `parseCidr`, which validates strictly and
 * canonicalises. A million entries parse in a few tens of milliseconds.
 */
export function toCidr(text: string): Cidr | undefined {
  if (typeof text !== 'string') return undefined;
  const n = text.length;
  if (n < 7 || n > 18) return slowCidr(text);
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  let i = 0;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return slowCidr(text); // leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return slowCidr(text);
    } else if (c === 46) {
      if (digits === 0 || dots === 3) return slowCidr(text);
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else if (c === 47) {
      break;
    } else {
      return slowCidr(text);
    }
  }
  if (dots !== 3 || digits === 0) return slowCidr(text);
  value = value * 256 + octet;
  let prefix = 32;
  if (i < n) {
    const p = text.slice(i + 1);
    if (!/^(?:[0-9]|[12][0-9]|3[01])$/.test(p)) return slowCidr(text); // includes `/32`, which is not canonical
    prefix = Number(p);
  }
  const size = 2 ** (32 - prefix);
  if (value % size !== 0) return slowCidr(text); // host bits set: let parseCidr clear them
  return { text, start: value, end: value + size - 1, prefix };
}

/**
 * toCidr of text[from, to) into `out` (network address and prefix), true when
 * it is one. A canonical address (`a.b.c.d`, no leading zeros) is read from
 * the text in place, with no string made for it: a kernel listing of a million
 * entries parses without a string or object per entry. Anything else goes
 * through toCidr on the slice, so both always agree.
 */
export function cidrAt(text: string, from: number, to: number, out: { start: number; prefix: number }): boolean {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  let i = from;
  for (; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) break; // leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) break;
    } else if (c === 46 && digits > 0 && dots < 3) {
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else break;
  }
  if (i === to && dots === 3 && digits > 0) {
    out.start = value * 256 + octet;
    out.prefix = 32;
    return true;
  }
  const c = toCidr(text.slice(from, to));
  if (!c) return false;
  out.start = c.start;
  out.prefix = c.prefix;
  return true;
}
