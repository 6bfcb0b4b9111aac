import type { ApplyResult, FirewallEntry, FirewallPlugin, PluginName } from '../../src/firewall/types.js';

/**
 * A FirewallPlugin that touches nothing and records every call, for tests of
 * the cycle and the daemon that must see whether (and what) was applied.
 */
export class RecordingPlugin implements FirewallPlugin {
  readonly applies: FirewallEntry[][] = [];
  flushes = 0;
  private held: string[] = [];

  constructor(readonly name: PluginName = 'dry-run') {}

  /** Calls that change the firewall (apply or flush). */
  get changes(): number {
    return this.applies.length + this.flushes;
  }

  async apply(entries: readonly FirewallEntry[]): Promise<ApplyResult> {
    this.applies.push([...entries]);
    const before = new Set(this.held);
    this.held = entries.map((e) => e.cidr).sort();
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
}
