/**
 * The simulator's base data set: N indicators computed on demand from (seed, index).
 * Nothing is stored per item, so 1,000,000 indicators cost no memory until asked for;
 * only the optional filter indexes (own org, manual decisions) are cached lazily as
 * typed arrays (~10% and ~1% of N).
 *
 * Properties (all deterministic for a given seed, count and start):
 * - index order is feed order: ts(i) is non-decreasing in i, so a `ts` query is a binary search;
 * - ts spread over `spanSeconds` (default 10 days) before `start`, denser towards `start`;
 * - ips are unique: ~85% single addresses, ~15% networks /16../31, never in EXCLUDED_RANGES;
 *   the mapping index -> ip is invertible (indexOf), so updates by ip need no table;
 * - score 1.00..10.00 (two decimals); ~10% belong to the caller's org; ~0.5% manual blocks,
 *   ~0.5% whitelisted, a third of those with a ttl (some already expired);
 * - deliberate runs of equal ts (`sameTsRuns`): 7 items straddling index 10, 100 and 1000
 *   (when N is large enough) and, for N >= 5000, one run of 1500 items (a batch import; off with
 *   `batchImport: false`).
 */
import { GoodSpace, Permutation, formatAddress, hash3, mix32 } from './ipspace.js';
import type { ItemView } from './render.js';

export const DAY = 86_400;

export interface SameTsRun {
  /** The shared ts. */
  readonly ts: number;
  readonly count: number;
  /** Index of the run's first item in the base data (feed order). */
  readonly startIndex: number;
}

export interface BaseDecision {
  decision: 0 | 1;
  ttl?: number;
}

const Salt = { Kind: 1, Prefix: 2, Ts: 3, Score: 4, Gid: 5, Decision: 6, Ttl: 7, Info: 8, Entry: 9, Org: 10 } as const;
type Salt = (typeof Salt)[keyof typeof Salt];

/** Relative weights of network prefix lengths (sum 100). */
const PREFIX_WEIGHTS: ReadonlyArray<readonly [number, number]> = [
  [16, 1], [17, 1], [18, 1], [19, 2], [20, 3], [21, 3], [22, 5], [23, 5],
  [24, 40], [25, 5], [26, 6], [27, 7], [28, 8], [29, 9], [30, 3], [31, 1],
];
const PREFIX_TABLE: number[] = PREFIX_WEIGHTS.flatMap(([p, w]) => Array<number>(w).fill(p));

const SPACES: GoodSpace[] = [];
for (let p = 16; p <= 32; p++) SPACES[p] = new GoodSpace(p);

export const MAX_INDICATORS = 1 << 24;
const TS_SHAPE = 2; // density grows ~e^2 times from the oldest to the newest item
const TS_SHAPE_M1 = Math.expm1(TS_SHAPE);
const ORG_COUNT = 40;

export interface DataOptions {
  seed: number;
  count: number;
  /** Epoch s the data is relative to (the clock's start value). */
  start: number;
  spanSeconds?: number;
  /**
   * The 1500-item run sharing one ts (N >= 5000), which no ts cursor with pages of 1000 can
   * page through, so the agent warns about skipped items. Default true (the tests want it);
   * the demo turns it off, as a newcomer would read the warning as data loss.
   */
  batchImport?: boolean;
}

export class IndicatorData {
  readonly seed: number;
  readonly count: number;
  readonly start: number;
  readonly span: number;
  /** Org gids; index 0 is the caller's own org. */
  readonly orgGids: readonly string[];
  readonly sameTsRuns: readonly SameTsRun[];
  private readonly batchImport: boolean;
  private readonly key: number;
  private readonly perms: Permutation[] = [];
  private ownIdx: Uint32Array | undefined;
  private decIdx: Uint32Array | undefined;

  constructor(opts: DataOptions) {
    if (!Number.isSafeInteger(opts.count) || opts.count < 0 || opts.count > MAX_INDICATORS) {
      throw new RangeError(`indicators must be an integer from 0 to ${MAX_INDICATORS}`);
    }
    this.seed = opts.seed;
    this.batchImport = opts.batchImport ?? true;
    this.count = opts.count;
    this.start = Math.floor(opts.start);
    this.span = opts.spanSeconds ?? 10 * DAY;
    this.key = mix32((mix32(opts.seed | 0) + Math.floor(opts.seed / 2 ** 32)) | 0);
    for (let p = 16; p <= 32; p++) this.perms[p] = new Permutation(SPACES[p]!.size, hash3(this.key, p, 99));
    const orgs: string[] = [];
    for (let g = 0; g < ORG_COUNT; g++) {
      let s = '';
      for (let w = 0; w < 3; w++) s += hash3(this.key, g, Salt.Org + w * 16).toString(16).padStart(8, '0');
      orgs.push(s);
    }
    this.orgGids = orgs;
    this.sameTsRuns = this.planRuns();
  }

  get ownGid(): string {
    return this.orgGids[0]!;
  }

  private h(i: number, salt: Salt): number {
    return hash3(this.key, i, salt);
  }

  private planRuns(): SameTsRun[] {
    const n = this.count;
    const specs: { startIndex: number; count: number }[] = [];
    for (const b of [10, 100, 1000]) if (n >= b + 4) specs.push({ startIndex: b - 3, count: 7 });
    if (n >= 5000 && this.batchImport) specs.push({ startIndex: Math.floor(n * 0.37) + (this.key % 97), count: 1500 });
    const runs: SameTsRun[] = [];
    let prev = -Infinity;
    for (const s of specs) {
      const ts = Math.max(this.rawTs(s.startIndex), prev + 2);
      runs.push({ ...s, ts });
      prev = ts;
    }
    return runs;
  }

  private rawTs(i: number): number {
    const f = (i + this.h(i, Salt.Ts) / 2 ** 32) / this.count;
    return this.start - this.span + Math.floor((this.span * Math.log1p(TS_SHAPE_M1 * f)) / TS_SHAPE);
  }

  tsAt(i: number): number {
    let r = this.rawTs(i);
    for (const run of this.sameTsRuns) {
      if (i < run.startIndex) r = Math.min(r, run.ts - 1);
      else if (i < run.startIndex + run.count) r = run.ts;
      else r = Math.max(r, run.ts + 1);
    }
    return r;
  }

  /** First index whose ts >= ts (count if none). */
  lowerBound(ts: number): number {
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.tsAt(mid) < ts) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  entryTsAt(i: number, ts = this.tsAt(i)): number {
    const h = this.h(i, Salt.Entry);
    return h % 4 === 0 ? ts : ts - (h % (30 * DAY));
  }

  /** Every rendered field of item i, computed once. */
  viewAt(i: number): ItemView {
    const ts = this.tsAt(i);
    const p = this.prefixAt(i);
    const a = formatAddress(this.addrAt(i, p));
    return {
      gid: this.gidAt(i),
      ip: p === 32 ? a : a + '/' + p,
      ts,
      entryTs: this.entryTsAt(i, ts),
      isNetwork: p < 32,
      score: this.scoreAt(i),
      infoSeed: this.infoSeedAt(i),
    };
  }

  isNetwork(i: number): boolean {
    return this.h(i, Salt.Kind) % 100 < 15;
  }

  /** 32 for a single address, else the network prefix length. */
  prefixAt(i: number): number {
    if (!this.isNetwork(i)) return 32;
    let p = PREFIX_TABLE[this.h(i, Salt.Prefix) % PREFIX_TABLE.length]!;
    while (SPACES[p]!.size <= i) p++; // keeps index -> network injective per prefix
    return p;
  }

  /** Network (or single) address as an unsigned 32-bit number. */
  addrAt(i: number, prefix = this.prefixAt(i)): number {
    const block = SPACES[prefix]!.unrank(this.perms[prefix]!.forward(i));
    return block * 2 ** (32 - prefix);
  }

  ipAt(i: number): string {
    const p = this.prefixAt(i);
    const a = formatAddress(this.addrAt(i, p));
    return p === 32 ? a : `${a}/${p}`;
  }

  /** Base index of the item with this address/prefix, or -1. */
  indexOf(addr: number, prefix: number): number {
    if (prefix < 16 || prefix > 32) return -1;
    const shift = 2 ** (32 - prefix);
    if (addr % shift !== 0) return -1;
    const r = SPACES[prefix]!.rank(addr / shift);
    if (r < 0) return -1;
    const i = this.perms[prefix]!.inverse(r);
    return i < this.count && this.prefixAt(i) === prefix ? i : -1;
  }

  scoreAt(i: number): number {
    return (100 + (this.h(i, Salt.Score) % 901)) / 100;
  }

  gidIndexAt(i: number): number {
    const h = this.h(i, Salt.Gid);
    return h % 10 === 0 ? 0 : 1 + ((h >>> 8) % (ORG_COUNT - 1));
  }

  gidAt(i: number): string {
    return this.orgGids[this.gidIndexAt(i)]!;
  }

  /** Seed for the item's descriptive fields (ip_info, info, dec, delay). */
  infoSeedAt(i: number): number {
    return this.h(i, Salt.Info);
  }

  /** The item's manual decision in the base data (ttl may already be past), or undefined. */
  decisionAt(i: number): BaseDecision | undefined {
    const h = this.h(i, Salt.Decision) % 1000;
    if (h >= 10) return undefined;
    const decision = h < 5 ? 1 : 0;
    const t = this.h(i, Salt.Ttl);
    if (t % 3 !== 0) return { decision };
    return { decision, ttl: this.start - DAY + ((t >>> 2) % (6 * DAY)) };
  }

  /** Indexes (ascending) of the caller's own-org items; computed once. */
  ownIndices(): Uint32Array {
    this.ownIdx ??= this.collect((i) => this.gidIndexAt(i) === 0);
    return this.ownIdx;
  }

  /** Indexes (ascending) of items with a base manual decision; computed once. */
  decisionIndices(): Uint32Array {
    this.decIdx ??= this.collect((i) => this.h(i, Salt.Decision) % 1000 < 10);
    return this.decIdx;
  }

  private collect(pred: (i: number) => boolean): Uint32Array {
    let out = new Uint32Array(1024);
    let n = 0;
    for (let i = 0; i < this.count; i++) {
      if (!pred(i)) continue;
      if (n === out.length) {
        const bigger = new Uint32Array(out.length * 2);
        bigger.set(out);
        out = bigger;
      }
      out[n++] = i;
    }
    return out.slice(0, n);
  }
}
