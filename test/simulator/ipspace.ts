/**
 * IPv4 helpers for the simulator: strict parsing/formatting, a seeded hash, a keyed
 * permutation (Feistel network with cycle walking) and the "public-looking" address
 * space. Together they map an item index to a unique address (or network) and back,
 * so the data set needs no per-item memory and still supports lookups by ip.
 */

/** 32-bit integer mix (lowbias32). Returns an unsigned 32-bit integer. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Hash of (key, i, salt) as an unsigned 32-bit integer. */
export function hash3(key: number, i: number, salt: number): number {
  return mix32((mix32((i ^ key) | 0) + Math.imul(salt + 1, 0x9e3779b9)) | 0);
}

/** Hash of a string (FNV-1a then mixed). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 0x01000193);
  return mix32(h);
}

/** Keyed bijection on [0, size), size <= 2^32. */
export class Permutation {
  private readonly half: number;
  private readonly mod: number;
  private readonly mask: number;
  private readonly keys: number[];

  constructor(
    readonly size: number,
    key: number,
  ) {
    let bits = Math.max(2, Math.ceil(Math.log2(Math.max(2, size))));
    if (bits % 2) bits++;
    this.half = bits / 2;
    this.mod = 2 ** this.half;
    this.mask = this.mod - 1;
    this.keys = [0, 1, 2, 3].map((r) => mix32((key + Math.imul(r + 7, 0x27d4eb2f)) | 0));
  }

  private f(r: number, k: number): number {
    return mix32((r ^ k) | 0) & this.mask;
  }

  private fwd(x: number): number {
    let l = Math.floor(x / this.mod);
    let r = x & this.mask;
    for (const k of this.keys) {
      const t = r;
      r = (l ^ this.f(r, k)) & this.mask;
      l = t;
    }
    return l * this.mod + r;
  }

  private inv(x: number): number {
    let l = Math.floor(x / this.mod);
    let r = x & this.mask;
    for (let j = this.keys.length - 1; j >= 0; j--) {
      const t = l;
      l = (r ^ this.f(l, this.keys[j]!)) & this.mask;
      r = t;
    }
    return l * this.mod + r;
  }

  forward(x: number): number {
    do x = this.fwd(x);
    while (x >= this.size);
    return x;
  }

  inverse(x: number): number {
    do x = this.inv(x);
    while (x >= this.size);
    return x;
  }
}

/**
 * Ranges never generated as data (they would look unrealistic or hit the agent's own
 * protections by accident): this-network, private, CGNAT, loopback, link-local,
 * benchmarking, multicast and reserved. All are /16 or wider.
 */
export const EXCLUDED_RANGES: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
];

interface Interval {
  start: number;
  len: number;
  cum: number;
}

/** The allowed /p blocks (n = address >>> (32 - p)), ranked in address order. */
export class GoodSpace {
  readonly size: number;
  private readonly intervals: Interval[];

  constructor(readonly prefix: number) {
    const shift = 2 ** (32 - prefix);
    const bad = EXCLUDED_RANGES.map(([a, p]) => {
      const start = parseAddress(a)! / shift;
      return [start, start + 2 ** (prefix - p)] as const;
    }).sort((x, y) => x[0] - y[0]);
    const intervals: Interval[] = [];
    let pos = 0;
    let cum = 0;
    for (const [s, e] of bad) {
      if (s > pos) {
        intervals.push({ start: pos, len: s - pos, cum });
        cum += s - pos;
      }
      pos = Math.max(pos, e);
    }
    const end = 2 ** prefix;
    if (end > pos) {
      intervals.push({ start: pos, len: end - pos, cum });
      cum += end - pos;
    }
    this.intervals = intervals;
    this.size = cum;
  }

  /** The r-th allowed block number. */
  unrank(r: number): number {
    for (const iv of this.intervals) if (r < iv.cum + iv.len) return iv.start + (r - iv.cum);
    throw new RangeError(`rank ${r} out of range`);
  }

  /** Rank of block number n, or -1 if n is excluded. */
  rank(n: number): number {
    for (const iv of this.intervals) {
      if (n < iv.start) return -1;
      if (n < iv.start + iv.len) return iv.cum + (n - iv.start);
    }
    return -1;
  }
}

const OCTET = /^(?:0|[1-9]\d{0,2})$/;

/** Strict dotted quad to unsigned 32-bit number, or null. */
export function parseAddress(s: string): number | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let v = 0;
  for (const p of parts) {
    if (!OCTET.test(p)) return null;
    const o = Number(p);
    if (o > 255) return null;
    v = v * 256 + o;
  }
  return v;
}

export function formatAddress(a: number): string {
  return `${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}`;
}

export interface ParsedIp {
  addr: number;
  prefix: number;
  /** Canonical text: `a.b.c.d` for a single address (also for `/32`), else `a.b.c.d/p`. */
  key: string;
}

/**
 * Strict IPv4 address or CIDR network: no leading zeros, prefix 0..32, host bits zero.
 * Returns null when invalid.
 */
export function parseIp(s: string): ParsedIp | null {
  const slash = s.indexOf('/');
  const addr = parseAddress(slash < 0 ? s : s.slice(0, slash));
  if (addr === null) return null;
  if (slash < 0) return { addr, prefix: 32, key: s };
  const ps = s.slice(slash + 1);
  if (!/^(?:0|[1-9]\d?)$/.test(ps)) return null;
  const prefix = Number(ps);
  if (prefix > 32) return null;
  const size = 2 ** (32 - prefix);
  if (addr % size !== 0) return null;
  return { addr, prefix, key: prefix === 32 ? formatAddress(addr) : `${formatAddress(addr)}/${prefix}` };
}
