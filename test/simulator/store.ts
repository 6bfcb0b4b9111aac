/**
 * Mutable state over the immutable base data: the fake clock, added/updated/removed
 * indicators (the overlay), manual decisions with ttl, and the merged feed order.
 *
 * Feed order: ts ascending; within one ts, base items (by index) before overlay items
 * (by update sequence). An indicator appears once: updating a base item hides ("shadows")
 * its base record and adds an overlay record with the new ts.
 */
import type { IndicatorData } from './data.js';
import { hashString, parseIp, type ParsedIp } from './ipspace.js';
import type { ItemView } from './render.js';

export type Decision = -1 | 0 | 1;

/** Org ids are rendered into JSON without escaping. */
const GID = /^[\w.-]{1,64}$/;

export class Clock {
  private frozen: number | undefined;
  constructor(initial?: number) {
    this.frozen = initial;
  }
  now(): number {
    return Math.floor(this.frozen ?? Date.now() / 1000);
  }
  set(epoch: number): void {
    if (!Number.isFinite(epoch)) throw new RangeError('clock.set: epoch must be a finite number');
    this.frozen = epoch;
  }
  advance(seconds: number): void {
    if (!Number.isFinite(seconds)) throw new RangeError('clock.advance: seconds must be a finite number');
    this.frozen = (this.frozen ?? Date.now() / 1000) + seconds;
  }
}

export interface OverlayRec {
  key: string;
  isNetwork: boolean;
  /** Base index this record replaces, or -1 for an indicator not in the base data. */
  baseIndex: number;
  ts: number;
  entryTs: number;
  score: number;
  gid: string;
  infoSeed: number;
  seq: number;
  source?: string | undefined;
  notes?: string | undefined;
}

interface DecisionRec {
  decision: Decision;
  ttl?: number | undefined;
  /** Base index when the ip is a base item (candidate for the filter=2/3 scans). */
  baseIndex: number;
}

/** A feed entry: a base index or an overlay record. */
export type Ref = number | OverlayRec;

export interface UpsertFields {
  score?: number | undefined;
  ts?: number | undefined;
  is_network?: boolean | undefined;
  gid?: string | undefined;
  source?: string | undefined;
  notes?: string | undefined;
}

export interface FeedItemLite {
  ip: string;
  ts: number;
  score: number;
  is_network: boolean;
  gid: string;
  /** Manual decision effective now (ttl applied). */
  decision: Decision;
}

function upperBoundTs(arr: readonly OverlayRec[], ts: number, strict: boolean): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (strict ? arr[mid]!.ts <= ts : arr[mid]!.ts < ts) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class FeedStore {
  private readonly shadowed = new Set<number>();
  private readonly overlay = new Map<string, OverlayRec>();
  private readonly sorted: OverlayRec[] = [];
  private readonly decisions = new Map<string, DecisionRec>();
  private seq = 0;
  private candCache: { version: number; filter: number; list: Uint32Array } | undefined;
  private version = 0;

  constructor(
    readonly data: IndicatorData,
    readonly clock: Clock,
  ) {}

  parse(ip: string): ParsedIp {
    const p = parseIp(ip);
    if (!p) throw new TypeError(`not a strict IPv4 address or CIDR network: ${ip}`);
    return p;
  }

  /** Adds or updates an indicator; its ts becomes `fields.ts` or now. Returns its record. */
  upsert(ip: string, fields: UpsertFields = {}, newGid?: string): OverlayRec {
    const p = this.parse(ip);
    for (const g of [fields.gid, newGid]) if (g !== undefined && !GID.test(g)) throw new TypeError(`gid must match ${GID}`);
    const ts = fields.ts ?? this.clock.now();
    let rec = this.overlay.get(p.key);
    if (rec) {
      this.sorted.splice(this.positionOf(rec), 1);
    } else {
      const i = this.data.indexOf(p.addr, p.prefix);
      const d = this.data;
      rec =
        i >= 0
          ? { key: p.key, isNetwork: p.prefix < 32, baseIndex: i, ts, entryTs: d.entryTsAt(i), score: d.scoreAt(i), gid: d.gidAt(i), infoSeed: d.infoSeedAt(i), seq: 0 }
          : { key: p.key, isNetwork: p.prefix < 32, baseIndex: -1, ts, entryTs: ts, score: 0, gid: newGid ?? d.orgGids[1]!, infoSeed: hashString(p.key), seq: 0 };
      if (i >= 0) this.shadowed.add(i);
      this.overlay.set(p.key, rec);
    }
    rec.ts = ts;
    rec.entryTs = Math.min(rec.entryTs, ts);
    rec.seq = ++this.seq;
    if (fields.score !== undefined) rec.score = fields.score;
    if (fields.is_network !== undefined) rec.isNetwork = fields.is_network;
    if (fields.gid !== undefined) rec.gid = fields.gid;
    if (fields.source !== undefined) rec.source = fields.source;
    if (fields.notes !== undefined) rec.notes = fields.notes;
    this.sorted.splice(upperBoundTs(this.sorted, ts, true), 0, rec);
    this.version++;
    return rec;
  }

  /** Removes an indicator from the feed (and its manual decision). Returns false if absent. */
  remove(ip: string): boolean {
    const p = this.parse(ip);
    this.decisions.delete(p.key);
    this.version++;
    const rec = this.overlay.get(p.key);
    if (rec) {
      this.overlay.delete(p.key);
      this.sorted.splice(this.positionOf(rec), 1);
      return true;
    }
    const i = this.data.indexOf(p.addr, p.prefix);
    if (i < 0 || this.shadowed.has(i)) return false;
    this.shadowed.add(i);
    return true;
  }

  /** Where an overlay record sits in `sorted`: from the first record of its ts on (a scan of the whole array cost seconds per update at a million). */
  private positionOf(rec: OverlayRec): number {
    for (let i = upperBoundTs(this.sorted, rec.ts, false); i < this.sorted.length; i++) if (this.sorted[i] === rec) return i;
    return this.sorted.indexOf(rec);
  }

  has(ip: string): boolean {
    const p = this.parse(ip);
    if (this.overlay.has(p.key)) return true;
    const i = this.data.indexOf(p.addr, p.prefix);
    return i >= 0 && !this.shadowed.has(i);
  }

  /** Sets (or with -1 clears) the manual decision of an indicator that is in the feed. */
  setDecision(ip: string, decision: Decision, ttl?: number): void {
    const p = this.parse(ip);
    this.decisions.set(p.key, { decision, ttl, baseIndex: this.data.indexOf(p.addr, p.prefix) });
    this.version++;
  }

  private effective(d: { decision: Decision; ttl?: number | undefined } | undefined, now: number): Decision {
    if (!d || (d.ttl !== undefined && now >= d.ttl)) return -1;
    return d.decision;
  }

  decisionOfBase(i: number, now: number): Decision {
    const o = this.decisions.size ? this.decisions.get(this.data.ipAt(i)) : undefined;
    return this.effective(o ?? this.data.decisionAt(i), now);
  }

  decisionOfRec(r: OverlayRec, now: number): Decision {
    const o = this.decisions.get(r.key);
    if (o) return this.effective(o, now);
    return r.baseIndex >= 0 ? this.effective(this.data.decisionAt(r.baseIndex), now) : -1;
  }

  /** Base candidates for a filter, ascending by index (null = every index). */
  private candidates(filter: number): Uint32Array | null {
    if (filter === 0) return null;
    if (filter === 1) return this.data.ownIndices();
    if (this.candCache?.version === this.version && this.candCache.filter === filter) return this.candCache.list;
    const extra: number[] = [];
    for (const d of this.decisions.values()) if (d.baseIndex >= 0) extra.push(d.baseIndex);
    const base = this.data.decisionIndices();
    const list = extra.length ? Uint32Array.from(new Set([...base, ...extra])).sort() : base;
    this.candCache = { version: this.version, filter, list };
    return list;
  }

  /** Feed entries with ts >= fromTs matching filter (0 all, 1 own org, 2 blocked, 3 whitelisted), in feed order. */
  *refs(filter: number, fromTs: number): Generator<Ref> {
    const d = this.data;
    const now = this.clock.now();
    const own = d.ownGid;
    const want = filter === 2 ? 1 : 0;
    const list = this.candidates(filter);
    const n = list ? list.length : d.count;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d.tsAt(list ? list[mid]! : mid) < fromTs) lo = mid + 1;
      else hi = mid;
    }
    let k = lo;
    let o = upperBoundTs(this.sorted, fromTs, false);
    const baseOk = (i: number): boolean => !this.shadowed.has(i) && (filter < 2 || this.decisionOfBase(i, now) === want);
    const recOk = (r: OverlayRec): boolean =>
      filter === 0 || (filter === 1 ? r.gid === own : this.decisionOfRec(r, now) === want);
    let bi = -1;
    let bts = 0;
    const nextBase = (): void => {
      bi = -1;
      while (k < n) {
        const i = list ? list[k++]! : k++;
        if (baseOk(i)) {
          bi = i;
          bts = d.tsAt(i);
          return;
        }
      }
    };
    let rec: OverlayRec | undefined;
    const nextRec = (): void => {
      rec = undefined;
      while (o < this.sorted.length) {
        const r = this.sorted[o++]!;
        if (recOk(r)) {
          rec = r;
          return;
        }
      }
    };
    nextBase();
    nextRec();
    while (bi >= 0 || rec) {
      if (bi >= 0 && (!rec || bts <= rec.ts)) {
        yield bi;
        nextBase();
      } else {
        yield rec!;
        nextRec();
      }
    }
  }

  page(filter: number, fromTs: number, limit: number): Ref[] {
    const out: Ref[] = [];
    if (limit <= 0) return out;
    for (const r of this.refs(filter, fromTs)) {
      out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  }

  view(r: Ref): ItemView {
    const d = this.data;
    if (typeof r === 'number') return d.viewAt(r);
    return { gid: r.gid, ip: r.key, ts: r.ts, entryTs: r.entryTs, isNetwork: r.isNetwork, score: r.score, infoSeed: r.infoSeed, source: r.source, notes: r.notes };
  }

  lite(r: Ref, now = this.clock.now()): FeedItemLite {
    const v = this.view(r);
    const decision = typeof r === 'number' ? this.decisionOfBase(r, now) : this.decisionOfRec(r, now);
    return { ip: v.ip, ts: v.ts, score: v.score, is_network: v.isNetwork, gid: v.gid, decision };
  }
}
