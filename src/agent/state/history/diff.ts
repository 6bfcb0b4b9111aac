import { CidrIndex } from '../../../net/cidr-index.js';
import { toCidr } from '../../../net/ipv4.js';
import type { Left } from '../../../policy/leave-reasons.js';
import { REASONS, REASON_CODE, type Reason } from '../../../policy/types.js';
import { releaseArray } from '../../../util/release.js';
import { AppliedColumns, type AppliedList } from '../applied-columns.js';
import { enforcedReason, type HistoryReason } from './codes.js';
import { EventColumns } from './events.js';

/** What the diff reads of an applied set: the applied columns, or the compact copy kept between writes. */
export interface AppliedView {
  readonly length: number;
  readonly starts: Uint32Array;
  readonly prefixes: Uint8Array;
  reason(i: number): Reason;
  expiresAt(i: number): number | null;
  score?(i: number): number | null;
}

/**
 * An applied set as the diff needs it between two writes, 10 bytes an entry (network,
 * prefix, reason, expiry in whole seconds): what a daemon keeps of its last write, so the
 * next one is compared without reading the applied record back (65 MB at a million).
 */
export class AppliedSnapshot implements AppliedView {
  readonly starts: Uint32Array;
  readonly prefixes: Uint8Array;
  private readonly reasons: Uint8Array;
  /** 0 = no expiry. */
  private readonly expires: Uint32Array;

  private constructor(readonly length: number) {
    this.starts = new Uint32Array(length);
    this.prefixes = new Uint8Array(length);
    this.reasons = new Uint8Array(length);
    this.expires = new Uint32Array(length);
  }

  static of(list: AppliedList | AppliedView): AppliedSnapshot {
    if (Array.isArray(list)) return AppliedSnapshot.of(columnsOf(list as AppliedList & unknown[]));
    const v = list as AppliedView;
    const s = new AppliedSnapshot(v.length);
    s.starts.set(v.starts.subarray(0, v.length));
    s.prefixes.set(v.prefixes.subarray(0, v.length));
    for (let i = 0; i < v.length; i++) {
      s.reasons[i] = REASON_CODE[v.reason(i)];
      const e = v.expiresAt(i);
      s.expires[i] = e === null ? 0 : Math.max(1, Math.min(0xfffffffe, Math.floor(e)));
    }
    return s;
  }

  static readonly empty = new AppliedSnapshot(0);

  reason(i: number): Reason {
    return REASONS[this.reasons[i]!]!;
  }

  expiresAt(i: number): number | null {
    const e = this.expires[i]!;
    return e === 0 ? null : e;
  }
}

/** Applied entries given as objects (a local apply, a record read back as entries) as columns. */
export function columnsOf(list: AppliedList): AppliedView {
  if (list instanceof AppliedColumns) return list;
  const out = new AppliedColumns(list.length);
  for (const e of list) {
    const c = toCidr(e.cidr);
    if (c) out.push(c.start, c.prefix, e.reason, e.expiresAt);
  }
  return out;
}

export interface DiffContext {
  /** Epoch s of the write. */
  readonly now: number;
  /** Why an entry that is not expired left (see policy/leave-reasons.ts). */
  readonly leave: (start: number, prefix: number, reason: Reason, expiresAt: number | null) => Left | { reason: HistoryReason; score: null; rank: null };
}

const whole = (t: number | null) => (t === null ? null : Math.floor(t));

/**
 * The changes from `prev` to `next`: an entry only in `next` is added (its reason, score,
 * rank = its place in `next`), one only in `prev` removed (why: `ctx.leave`), one in both
 * with another reason or expiry updated. Entries whose kernel timeout ran out before this
 * write come first, each at its own expiry and with the cause `expiry`: they left when the
 * kernel dropped them, not now. `changes`: how many are not such expiries. One hash index of `next`: tens of milliseconds at a million entries.
 */
export function diffApplied(prev: AppliedView, next: AppliedView, ctx: DiffContext): { events: EventColumns; changes: number } {
  const changed = new EventColumns('addresses');
  const expired = new EventColumns('addresses');
  const index = new CidrIndex(next.length);
  // 1: matched in `prev` (or a repeat of a network already in `next`): not added.
  const seen = new Uint8Array(next.length);
  for (let j = 0; j < next.length; j++) if (index.add(next.starts[j]!, next.prefixes[j]!, j) !== -1) seen[j] = 1;
  const { now } = ctx;
  for (let i = 0; i < prev.length; i++) {
    const target = { start: prev.starts[i]!, prefix: prev.prefixes[i]! };
    const reason = prev.reason(i);
    const expiresAt = whole(prev.expiresAt(i));
    const j = index.get(target.start, target.prefix);
    if (j !== -1 && seen[j] === 1) continue; // the same network twice in one record: once is enough
    const previous = { prev: enforcedReason(reason), prevExpires: expiresAt };
    if (expiresAt !== null && expiresAt <= now) {
      // Gone from the kernel at its expiry; if it is in `next`, it came back now.
      expired.push(target, { ts: expiresAt, change: 'removed', reason: 'expired', cause: 'expiry', ...previous });
      continue;
    }
    if (j === -1) {
      const left = ctx.leave(target.start, target.prefix, reason, expiresAt);
      changed.push(target, { ts: now, change: 'removed', reason: left.reason, score: left.score, rank: left.rank, ...previous });
      continue;
    }
    seen[j] = 1;
    const nextExpires = whole(next.expiresAt(j));
    if (next.reason(j) === reason && nextExpires === expiresAt) continue;
    changed.push(target, { ts: now, change: 'updated', reason: enforcedReason(next.reason(j)), score: next.score?.(j) ?? null, rank: j + 1, expires: nextExpires, ...previous });
  }
  for (let j = 0; j < next.length; j++) {
    if (seen[j] === 1) continue;
    changed.push({ start: next.starts[j]!, prefix: next.prefixes[j]! }, { ts: now, change: 'added', reason: enforcedReason(next.reason(j)), score: next.score?.(j) ?? null, rank: j + 1, expires: whole(next.expiresAt(j)) });
  }
  index.release();
  releaseArray(seen);
  const changes = changed.length;
  for (let i = 0; i < changes; i++) expired.copyFrom(changed, i);
  return { events: expired, changes };
}
