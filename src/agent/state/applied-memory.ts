import type { FirewallEntry, FirewallPlugin } from '../../firewall/index.js';
import { asColumns, EntryColumns } from '../../firewall/entry-columns.js';

/**
 * The last set this process applied, kept in memory for the watcher: a repair
 * between cycles re-asserts exactly it, without reading the state files or
 * calling the API. Timeouts are counted down from the apply, so a repair never
 * lengthens an entry's life. Kept as columns (13 bytes an entry, not an
 * object with its Cidr): it lives as long as the daemon.
 */
export class AppliedMemory {
  private last: { entries: EntryColumns; atMs: number; capacity: number } | undefined;

  /** The plugin with every successful apply remembered (and told to `onApplied`); everything else passes through. */
  wrap(plugin: FirewallPlugin, onApplied?: () => void): FirewallPlugin {
    return {
      name: plugin.name,
      apply: async (entries, options) => {
        const result = await plugin.apply(entries, options);
        this.last = { entries: asColumns(entries), atMs: Date.now(), capacity: options.capacity };
        onApplied?.();
        return result;
      },
      ...(plugin.prefetch ? { prefetch: () => plugin.prefetch!() } : {}),
      ...(plugin.check ? { check: () => plugin.check!() } : {}),
      ...(plugin.verify ? { verify: (entries) => plugin.verify!(entries) } : {}),
      ...(plugin.distrust ? { distrust: (why: string) => plugin.distrust!(why) } : {}),
      list: () => plugin.list(),
      flush: async () => {
        await plugin.flush();
        this.last = undefined; // nothing of the agent's is meant to be there any more
      },
      ...(plugin.listTimeouts ? { listTimeouts: () => plugin.listTimeouts!() } : {}),
      readCounters: () => plugin.readCounters(),
      readHits: () => plugin.readHits(),
      objects: () => plugin.objects(),
    };
  }

  /** Whether this process has applied a set (and not flushed it since). */
  get holds(): boolean {
    return this.last !== undefined;
  }

  /**
   * How many of the last applied entries still have more than `slackS` seconds left at
   * `nowMs` (permanent ones count), without making them into objects; undefined when
   * nothing was applied yet.
   */
  lastingCount(nowMs: number, slackS: number): number | undefined {
    const last = this.last;
    if (!last) return undefined;
    const elapsed = (nowMs - last.atMs) / 1000;
    // Timeouts and slack are whole seconds, so the count changes only when ceil(elapsed) does:
    // kept for that second. Every /readyz and /healthz asks; at a million entries counting took
    // milliseconds a request, and a flood of probes queued behind it (median 107 ms).
    const second = Math.ceil(elapsed);
    const c = this.counted;
    if (c && c.of === last && c.second === second && c.slackS === slackS) return c.n;
    const t = last.entries.timeouts;
    let n = 0;
    // The same remaining time entriesNow gives each entry (whole seconds, rounded down).
    for (let i = 0; i < last.entries.length; i++) if (Number.isNaN(t[i]!) || Math.floor(t[i]! - elapsed) > slackS) n++;
    this.counted = { of: last, second, slackS, n };
    return n;
  }

  /** The last lastingCount, for the second it holds in. */
  private counted: { of: NonNullable<AppliedMemory['last']>; second: number; slackS: number; n: number } | undefined;

  /**
   * The last applied entries as of `nowMs`, with their remaining timeouts in
   * whole seconds rounded down (never longer than the kernel was given);
   * expired ones are left out. Undefined when nothing was applied yet. Columns,
   * not objects: a repair at a million entries spent a second making them.
   */
  entriesNow(nowMs: number): { entries: EntryColumns; capacity: number } | undefined {
    const last = this.last;
    if (!last) return undefined;
    const elapsed = (nowMs - last.atMs) / 1000;
    const cols = last.entries;
    const entries = new EntryColumns(cols.length);
    for (let i = 0; i < cols.length; i++) {
      const t = cols.timeouts[i]!;
      if (Number.isNaN(t)) entries.push(cols.starts[i]!, cols.prefixes[i]!, undefined);
      else {
        const left = Math.floor(t - elapsed);
        if (left >= 1) entries.push(cols.starts[i]!, cols.prefixes[i]!, left);
      }
    }
    return { entries, capacity: last.capacity };
  }
}
