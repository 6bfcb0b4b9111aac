import { CAUSE_CODE, CHANGE_CODE, CHANGES, HISTORY_REASONS, REASON_CODE, CAUSES, type Cause, type Change, type HistoryReason } from './codes.js';

/** No expiry (a permanent entry) and no expiry to tell (an entry that left), as the columns store them. */
export const PERMANENT = 0xffffffff;
export const NO_EXPIRY = 0;
/** An unknown previous reason (an entry added in a batch the history no longer holds, or a name). */
export const NO_PREVIOUS = 0xff;

/** One change of one entry, as the history reads it back. */
export interface HistoryEvent {
  /** Epoch seconds: when it happened (an expiry: when the kernel timeout ran out). */
  readonly ts: number;
  /** The entry: an address or network in CIDR form, or a name. */
  readonly entry: string;
  readonly change: Change;
  readonly reason: HistoryReason;
  /** The decayed score when it applies (score entries, and an entry that left below the threshold). */
  readonly score: number | null;
  /** Its place in the applied set (1 = first), or past the cap for one cut by maximum_rules. */
  readonly rank: number | null;
  readonly cause: Cause;
  /** Added or updated: when its kernel timeout ends (null = no timeout; undefined: not said). */
  readonly expires?: number | null;
  /** Removed or updated: what it was blocked for before, and until when. */
  readonly previous?: { readonly reason: HistoryReason; readonly expires: number | null };
  /** The place of its batch in the history (orders it against a note of the same second). */
  readonly seq?: number;
}

/** No score, as the score column stores it (scores are kept to the hundredth: what every output shows). */
export const NO_SCORE = 0xffffffff;

const grow = <T extends Uint32Array | Uint8Array>(a: T, n: number): T => {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
};

/**
 * A batch of changes as columns, in the order they were found: the target columns (an
 * address's network and prefix, or a name) and what the history keeps of each change. A
 * cycle that changes ten thousand entries makes no object per change.
 */
export class EventColumns {
  starts = new Uint32Array(16);
  prefixes = new Uint8Array(16);
  names: string[] = [];
  ts = new Uint32Array(16);
  /** change << 6 | reason. */
  codes = new Uint8Array(16);
  prev = new Uint8Array(16);
  causes = new Uint8Array(16);
  /** Hundredths of the score; NO_SCORE = none. */
  scores = new Uint32Array(16);
  /** 0 = none. */
  ranks = new Uint32Array(16);
  expires = new Uint32Array(16);
  prevExpires = new Uint32Array(16);
  length = 0;

  constructor(readonly kind: 'addresses' | 'names') {}

  private room(): number {
    if (this.length === this.ts.length) {
      const n = this.length * 2;
      this.starts = grow(this.starts, n);
      this.prefixes = grow(this.prefixes, n);
      this.ts = grow(this.ts, n);
      this.codes = grow(this.codes, n);
      this.prev = grow(this.prev, n);
      this.causes = grow(this.causes, n);
      this.scores = grow(this.scores, n);
      this.ranks = grow(this.ranks, n);
      this.expires = grow(this.expires, n);
      this.prevExpires = grow(this.prevExpires, n);
    }
    return this.length++;
  }

  /**
   * One change. `expires`/`prevExpires`: epoch s, null = permanent, undefined = none to tell.
   * The target is `start`/`prefix` for addresses, `name` for names; `cause` defaults to the batch's.
   */
  push(
    target: { start: number; prefix: number } | string,
    e: { ts: number; change: Change; reason: HistoryReason; cause?: Cause; score?: number | null; rank?: number | null; expires?: number | null; prev?: HistoryReason; prevExpires?: number | null },
  ): void {
    const i = this.room();
    if (typeof target === 'string') this.names.push(target);
    else {
      this.starts[i] = target.start;
      this.prefixes[i] = target.prefix;
    }
    this.ts[i] = e.ts;
    this.codes[i] = (CHANGE_CODE[e.change] << 6) | REASON_CODE[e.reason];
    this.prev[i] = e.prev === undefined ? NO_PREVIOUS : REASON_CODE[e.prev];
    this.causes[i] = e.cause === undefined ? NO_CAUSE : CAUSE_CODE[e.cause];
    this.scores[i] = scoreCode(e.score);
    this.ranks[i] = e.rank ?? 0;
    this.expires[i] = expiryCode(e.expires);
    this.prevExpires[i] = expiryCode(e.prevExpires);
  }

  /** Append change `i` of `from` (the same kind) as it is. */
  copyFrom(from: EventColumns, i: number): void {
    const j = this.room();
    if (from.kind === 'names') this.names.push(from.names[i]!);
    else {
      this.starts[j] = from.starts[i]!;
      this.prefixes[j] = from.prefixes[i]!;
    }
    this.ts[j] = from.ts[i]!;
    this.codes[j] = from.codes[i]!;
    this.prev[j] = from.prev[i]!;
    this.causes[j] = from.causes[i]!;
    this.scores[j] = from.scores[i]!;
    this.ranks[j] = from.ranks[i]!;
    this.expires[j] = from.expires[i]!;
    this.prevExpires[j] = from.prevExpires[i]!;
  }

  change(i: number): Change {
    return CHANGES[this.codes[i]! >> 6]!;
  }

  reason(i: number): HistoryReason {
    return HISTORY_REASONS[this.codes[i]! & 0x3f] ?? 'unknown';
  }
}

/** The batch's cause (an event with a cause of its own, such as an expiry, says it). */
export const NO_CAUSE = 0xff;

function scoreCode(s: number | null | undefined): number {
  if (s === null || s === undefined || !Number.isFinite(s)) return NO_SCORE;
  return Math.min(NO_SCORE - 1, Math.max(0, Math.round(s * 100)));
}

/** A score column's value as a number. */
export function scoreOf(code: number): number | null {
  return code === NO_SCORE ? null : code / 100;
}

function expiryCode(e: number | null | undefined): number {
  if (e === undefined) return NO_EXPIRY;
  if (e === null) return PERMANENT;
  return Math.min(PERMANENT - 1, Math.max(1, Math.floor(e)));
}

/** An expiry column's value as an event states it. */
export function expiryOf(code: number): number | null | undefined {
  return code === NO_EXPIRY ? undefined : code === PERMANENT ? null : code;
}

export function causeOf(code: number): Cause {
  return CAUSES[code] ?? 'cycle';
}
