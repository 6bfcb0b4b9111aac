import { fromNumber } from '../net/ipv4.js';
import type { Reason, SelectedEntry } from './select.js';
import { networkOf } from './score-entry.js';

const REASONS: readonly Reason[] = ['score', 'manual', 'url', 'local'];
const REASON_CODE: Readonly<Record<Reason, number>> = { score: 0, manual: 1, url: 2, local: 3 };

/**
 * Selected entries as columns (22 bytes an entry instead of an object with its
 * Cidr, text and boxed numbers, about 200): for what a long-lived process keeps
 * between cycles, such as the daemon's last selection, which the local
 * overrides start from. Turned back into entries only when they are used.
 */
export class SelectedColumns {
  private constructor(
    private readonly starts: Uint32Array,
    private readonly prefixes: Uint8Array,
    private readonly reasons: Uint8Array,
    /** NaN = null. */
    private readonly scores: Float64Array,
    /** NaN = null. */
    private readonly expires: Float64Array,
  ) {}

  static of(entries: readonly SelectedEntry[]): SelectedColumns {
    const n = entries.length;
    const c = new SelectedColumns(new Uint32Array(n), new Uint8Array(n), new Uint8Array(n), new Float64Array(n), new Float64Array(n));
    for (let i = 0; i < n; i++) {
      const e = entries[i]!;
      const { start, prefix } = networkOf(e);
      c.starts[i] = start;
      c.prefixes[i] = prefix;
      c.reasons[i] = REASON_CODE[e.reason];
      c.scores[i] = e.score ?? NaN;
      c.expires[i] = e.expiresAt ?? NaN;
    }
    return c;
  }

  get length(): number {
    return this.starts.length;
  }

  toEntries(): SelectedEntry[] {
    const out: SelectedEntry[] = [];
    for (let i = 0; i < this.starts.length; i++) {
      const score = this.scores[i]!;
      const expiresAt = this.expires[i]!;
      out.push({
        cidr: fromNumber(this.starts[i]!, this.prefixes[i]!),
        reason: REASONS[this.reasons[i]!]!,
        score: Number.isNaN(score) ? null : score,
        expiresAt: Number.isNaN(expiresAt) ? null : expiresAt,
      });
    }
    return out;
  }
}
