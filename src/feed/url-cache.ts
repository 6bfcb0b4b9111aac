import { hostOfUrl, type HostOf } from './host.js';

/** A URL record's decision, from its tags: -1 none (score-based), 0 whitelisted, 1 blacklisted. */
export type UrlDecisionState = -1 | 0 | 1;

export const HOST_KIND = { name: 0, ipv4: 1, publicSuffix: 2 } as const;
type HostKind = (typeof HOST_KIND)[keyof typeof HOST_KIND];

/**
 * The URL feed, folded compactly. A million URL strings would cost hundreds of MB; the
 * agent only needs, per URL, its host, score, ts and decision, and de-duplication by URL
 * (the newest record of a URL wins). So each URL is kept as a 64-bit hash of its text
 * (two 32-bit halves) and four numbers in typed columns (25 bytes), found through an
 * open-addressing table of 4-byte slots; each distinct host is stored once. A million
 * URLs cost about 40 MB.
 *
 * Invalid URLs (no usable host) are counted, not stored.
 */
export class UrlCache {
  /** host text -> host id */
  private readonly hostIds = new Map<string, number>();
  readonly hosts: string[] = [];
  private hostKinds = new Uint8Array(1024);

  private size_ = 0;
  private hashHi: Uint32Array;
  private hashLo: Uint32Array;
  private hostOf: Uint32Array;
  private tsOf: Uint32Array;
  private scoreOf: Float64Array;
  private decisionOf: Int8Array;
  /** Slot table: dense index + 1, 0 = empty. */
  private slots: Int32Array;
  invalid = 0;

  constructor(capacity = 1024) {
    const c = Math.max(16, capacity);
    this.hashHi = new Uint32Array(c);
    this.hashLo = new Uint32Array(c);
    this.hostOf = new Uint32Array(c);
    this.tsOf = new Uint32Array(c);
    this.scoreOf = new Float64Array(c);
    this.decisionOf = new Int8Array(c);
    this.slots = new Int32Array(slotCountFor(c));
  }

  get size(): number {
    return this.size_;
  }

  /** Id of a stored host, or -1. */
  lookupHost(name: string): number {
    return this.hostIds.get(name) ?? -1;
  }

  hostKind(id: number): HostKind {
    return this.hostKinds[id] as HostKind;
  }

  /** Folds one URL record in; answers false when the URL has no usable host. */
  upsert(url: string, score: number, ts: number, decision: UrlDecisionState): boolean {
    const [hi, lo] = hashUrl(url);
    const at = this.find(hi, lo);
    if (at >= 0) {
      // Same URL again: the newest record wins (pages overlap at their edges).
      if (ts < this.tsOf[at]!) return true;
      this.tsOf[at] = ts;
      this.scoreOf[at] = score;
      this.decisionOf[at] = decision;
      return true;
    }
    const host = this.hostIdOf(url);
    if (host < 0) {
      this.invalid++;
      return false;
    }
    this.insert(hi, lo, host, ts, score, decision);
    return true;
  }

  /** Folds every URL of `other` in (newest wins); `other` must come from a later pull. */
  merge(other: UrlCache): void {
    for (let i = 0; i < other.size_; i++) {
      const hi = other.hashHi[i]!;
      const lo = other.hashLo[i]!;
      const at = this.find(hi, lo);
      if (at >= 0) {
        if (other.tsOf[i]! < this.tsOf[at]!) continue;
        this.tsOf[at] = other.tsOf[i]!;
        this.scoreOf[at] = other.scoreOf[i]!;
        this.decisionOf[at] = other.decisionOf[i]!;
        continue;
      }
      const h = other.hosts[other.hostOf[i]!]!;
      this.insert(hi, lo, this.addHost(h, other.hostKind(other.hostOf[i]!)), other.tsOf[i]!, other.scoreOf[i]!, other.decisionOf[i] as UrlDecisionState);
    }
    this.invalid += other.invalid;
  }

  /** Columns for a walk without objects: entry i has host hostOf[i], and so on. */
  columns(): { hostOf: Uint32Array; tsOf: Uint32Array; scoreOf: Float64Array; decisionOf: Int8Array; hashHi: Uint32Array; hashLo: Uint32Array } {
    const n = this.size_;
    return {
      hostOf: this.hostOf.subarray(0, n),
      tsOf: this.tsOf.subarray(0, n),
      scoreOf: this.scoreOf.subarray(0, n),
      decisionOf: this.decisionOf.subarray(0, n),
      hashHi: this.hashHi.subarray(0, n),
      hashLo: this.hashLo.subarray(0, n),
    };
  }

  /** Rebuilds a cache from stored columns (see state/url-cache-file.ts). */
  static fromColumns(hosts: readonly string[], kinds: Uint8Array, cols: ReturnType<UrlCache['columns']>, invalid: number): UrlCache {
    const n = cols.hostOf.length;
    const c = new UrlCache(n + Math.max(1024, Math.ceil(n / 16)));
    for (let h = 0; h < hosts.length; h++) c.addHost(hosts[h]!, kinds[h] as HostKind);
    for (let i = 0; i < n; i++) {
      const host = cols.hostOf[i]!;
      if (host >= hosts.length || c.find(cols.hashHi[i]!, cols.hashLo[i]!) >= 0) continue;
      c.insert(cols.hashHi[i]!, cols.hashLo[i]!, host, cols.tsOf[i]!, cols.scoreOf[i]!, clampDecision(cols.decisionOf[i]!));
    }
    c.invalid = invalid;
    return c;
  }

  hostKindsView(): Uint8Array {
    return this.hostKinds.subarray(0, this.hosts.length);
  }

  private hostIdOf(url: string): number {
    const h: HostOf = hostOfUrl(url);
    if (h.kind === 'invalid') return -1;
    if (h.kind === 'ipv4') return this.addHost(h.ip, HOST_KIND.ipv4);
    return this.addHost(h.name, h.kind === 'public_suffix' ? HOST_KIND.publicSuffix : HOST_KIND.name);
  }

  private addHost(name: string, kind: HostKind): number {
    let id = this.hostIds.get(name);
    if (id !== undefined) return id;
    id = this.hosts.length;
    this.hosts.push(name);
    this.hostIds.set(name, id);
    if (id >= this.hostKinds.length) {
      const k = new Uint8Array(this.hostKinds.length * 2);
      k.set(this.hostKinds);
      this.hostKinds = k;
    }
    this.hostKinds[id] = kind;
    return id;
  }

  private find(hi: number, lo: number): number {
    const mask = this.slots.length - 1;
    for (let s = (lo ^ Math.imul(hi, 0x9e3779b1)) & mask; ; s = (s + 1) & mask) {
      const v = this.slots[s]!;
      if (v === 0) return -1;
      if (this.hashLo[v - 1] === lo && this.hashHi[v - 1] === hi) return v - 1;
    }
  }

  private insert(hi: number, lo: number, host: number, ts: number, score: number, decision: UrlDecisionState): void {
    if (this.size_ === this.hashHi.length) this.grow();
    const i = this.size_++;
    this.hashHi[i] = hi;
    this.hashLo[i] = lo;
    this.hostOf[i] = host;
    this.tsOf[i] = ts;
    this.scoreOf[i] = score;
    this.decisionOf[i] = decision;
    this.place(i);
  }

  private place(i: number): void {
    const mask = this.slots.length - 1;
    let s = (this.hashLo[i]! ^ Math.imul(this.hashHi[i]!, 0x9e3779b1)) & mask;
    while (this.slots[s] !== 0) s = (s + 1) & mask;
    this.slots[s] = i + 1;
  }

  private grow(): void {
    const c = this.hashHi.length * 2;
    const re = <T extends Uint32Array | Float64Array | Int8Array>(a: T, make: (n: number) => T): T => {
      const b = make(c);
      b.set(a as never);
      return b;
    };
    this.hashHi = re(this.hashHi, (n) => new Uint32Array(n));
    this.hashLo = re(this.hashLo, (n) => new Uint32Array(n));
    this.hostOf = re(this.hostOf, (n) => new Uint32Array(n));
    this.tsOf = re(this.tsOf, (n) => new Uint32Array(n));
    this.scoreOf = re(this.scoreOf, (n) => new Float64Array(n));
    this.decisionOf = re(this.decisionOf, (n) => new Int8Array(n));
    this.slots = new Int32Array(slotCountFor(c));
    for (let i = 0; i < this.size_; i++) this.place(i);
  }
}

/** At most half the slots are used, so probes stay short. */
function slotCountFor(capacity: number): number {
  let n = 16;
  while (n < capacity * 2) n *= 2;
  return n;
}

function clampDecision(d: number): UrlDecisionState {
  return d === 0 || d === 1 ? d : -1;
}

/** Two independent 32-bit FNV-1a variants over the UTF-16 code units: a 64-bit key per URL. */
export function hashUrl(s: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x2f6b1a3d;
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return [a >>> 0, b >>> 0];
}
