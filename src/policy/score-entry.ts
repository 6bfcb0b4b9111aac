import { fromNumber, type Cidr } from '../net/ipv4.js';
import type { SelectedEntry } from './types.js';

/**
 * A score entry as SelectedColumns makes it when entries are asked for (plan,
 * explain, the overrides): it holds its network as two numbers and makes its
 * Cidr (with the text) only when asked. A plain object with a Cidr and its
 * text cost ~230 bytes an entry; this ~100 (its three numbers are boxed). Callers that read `cidr` more than
 * once per entry keep it in a local.
 */
export class ScoreEntry implements SelectedEntry {
  constructor(
    readonly start: number,
    readonly prefix: number,
    readonly score: number,
    readonly expiresAt: number | null,
  ) {}

  get cidr(): Cidr {
    return fromNumber(this.start, this.prefix);
  }

  /** The network address and prefix (this object itself: no allocation). */
  get network(): { readonly start: number; readonly prefix: number } {
    return this;
  }

  get reason(): 'score' {
    return 'score';
  }

  /** As a plain entry (what JSON.stringify writes). */
  toJSON(): { cidr: Cidr; reason: 'score'; score: number; expiresAt: number | null } {
    return { cidr: this.cidr, reason: 'score', score: this.score, expiresAt: this.expiresAt };
  }
}

/**
 * The network of a selected entry as its two numbers, without making a Cidr
 * (and its text) for a score entry: what a million-entry apply reads.
 */
export function networkOf(e: SelectedEntry): { readonly start: number; readonly prefix: number } {
  return e instanceof ScoreEntry ? e.network : e.cidr;
}

