import { asColumns, type FirewallEntries } from '../../src/firewall/entry-columns.js';
import type { ApplyOptions, ApplyResult, DropCounters, FirewallPlugin, HitCounter, OwnedObject, PluginName } from '../../src/firewall/plugin.js';
import type { FirewallEntry } from '../../src/firewall/entry.js';

/**
 * A FirewallPlugin that touches nothing and records every call, for tests of
 * the cycle and the daemon that must see whether (and what) was applied.
 */
export class RecordingPlugin implements FirewallPlugin {
  readonly applies: FirewallEntry[][] = [];
  /** The options of each apply (the capacity it was sized for). */
  readonly applyOptions: ApplyOptions[] = [];
  flushes = 0;
  private held: string[] = [];

  constructor(readonly name: PluginName = 'dry-run') {}

  /** Calls that change the firewall (apply or flush). */
  get changes(): number {
    return this.applies.length + this.flushes;
  }

  async apply(input: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    const entries = asColumns(input).toArray();
    this.applies.push(entries);
    this.applyOptions.push(options);
    const before = new Set(this.held);
    this.held = entries.map((e) => e.cidr.text).sort();
    const added = this.held.filter((c) => !before.has(c)).length;
    return { added, removed: before.size - (this.held.length - added), updated: 0, mode: 'full', repaired: [] };
  }

  async list(): Promise<string[]> {
    return [...this.held];
  }

  async flush(): Promise<void> {
    this.flushes++;
    this.held = [];
  }

  async readCounters(): Promise<DropCounters> {
    return { packets: 0, bytes: 0 };
  }

  async readHits(): Promise<HitCounter[]> {
    return [];
  }

  async objects(): Promise<OwnedObject[]> {
    return [];
  }
}
