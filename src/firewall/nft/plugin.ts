import { chooseMode, diffEntries } from '../diff.js';
import { normalizeEntries, sortCidrTexts } from '../entries.js';
import { createRunner, stderrMatches } from '../exec.js';
import { KernelPlugin } from '../kernel-plugin.js';
import type { ApplyOptions, ApplyResult, CommandRunner, DropCounters, FirewallEntry, FirewallPlugin, OwnedObject, PluginOptions, WatchCheck } from '../plugin.js';
import { parseNftCounters } from './json.js';
import { resolveOverlaps } from './overlaps.js';
import { checkNftStructure, type NftStructure } from './structure.js';
import { nftHooks, parseNftSetJson, renderNftDelta, renderNftRecreate, renderNftRefill, type NftLayout, type NftSetParsed } from './text.js';

/** How nft says a table or set does not exist. */
const NO_SUCH_OBJECT = /No such file or directory/i;

/**
 * nftables backend: the agent's own table `inet <table_name>` holding an
 * interval set with per-element timeouts and one base chain per hook
 * (input/forward/output) at priority -5. Every change is ONE `nft -f -` run,
 * which the kernel commits as one transaction:
 *
 * - intact table, large change: `flush set` + `add element` (atomic: packets
 *   see the old contents or the new, never an empty set; counters kept);
 * - table missing or altered: `add table; delete table; table { ... }` — the
 *   whole table re-created, with its elements, in the same transaction;
 * - small change: `delete element` + `add element`.
 *
 * Overlapping entries are resolved before rendering (see resolveOverlaps): the
 * set has no auto-merge, so it holds exactly the entries rendered. The set has
 * no fixed size, so the apply's capacity does not matter here.
 */
export class NftablesPlugin extends KernelPlugin implements FirewallPlugin {
  readonly name = 'nftables' as const;
  private readonly runner: CommandRunner;
  private readonly layout: NftLayout;

  constructor(options: PluginOptions) {
    super(options.logger);
    this.runner = options.runner ?? createRunner();
    this.layout = {
      table: options.names.tableName,
      set: options.names.setName,
      hooks: nftHooks(options.hookChains),
      action: options.action,
      logBlocked: options.logBlocked,
    };
  }

  /** `nft -j ARGS` output, or undefined when the object listed does not exist. */
  private async listJson(args: readonly string[]): Promise<string | undefined> {
    try {
      return (await this.runner.run('nft', ['-j', ...args])).stdout;
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_OBJECT)) return undefined;
      throw err;
    }
  }

  /** The table listed without set elements (`-t`), or undefined when it does not exist. */
  private tableJson(): Promise<string | undefined> {
    return this.listJson(['-t', 'list', 'table', 'inet', this.layout.table]);
  }

  /** `undefined` when the table does not exist, else what differs from the agent's table. */
  private async structure(): Promise<NftStructure | undefined> {
    const json = await this.tableJson();
    return json === undefined ? undefined : checkNftStructure(json, this.layout);
  }

  /** Elements of the set, or undefined when the set (or table) does not exist. */
  private async elements(): Promise<NftSetParsed | undefined> {
    const json = await this.listJson(['list', 'set', 'inet', this.layout.table, this.layout.set]);
    return json === undefined ? undefined : parseNftSetJson(json);
  }

  private async transaction(script: string): Promise<void> {
    await this.runner.run('nft', ['-f', '-'], { input: script });
  }

  protected async applyNow(entries: readonly FirewallEntry[], options: ApplyOptions): Promise<ApplyResult> {
    const wanted = resolveOverlaps(normalizeEntries(entries));
    const structure = await this.structure();
    const repairs = this.repairs(structure === undefined, options);
    if (structure === undefined) repairs.note(`nft table inet ${this.layout.table}`);
    else for (const p of structure.problems) repairs.note(p);
    const intact = structure !== undefined && structure.problems.length === 0;
    // A broken table may still hold a readable set: read it for the counts.
    const current = structure?.setReadable ? await this.elements() : undefined;
    const currentEntries = current?.entries ?? new Map<string, number | undefined>();
    const diff = diffEntries(currentEntries, wanted);
    const mode = chooseMode(diff, currentEntries.size, wanted.length, !intact || (current?.nonCidr ?? 0) > 0);

    if (!intact) await this.transaction(renderNftRecreate(this.layout, wanted));
    else if (mode === 'full') await this.transaction(renderNftRefill(this.layout, wanted));
    else if (mode === 'delta') await this.transaction(renderNftDelta(this.layout, diff.add, diff.del));

    return this.done(repairs, { what: 'nft table', fields: { table: this.layout.table, set: this.layout.set } }, diff, mode, wanted.length);
  }

  async list(): Promise<string[]> {
    const parsed = await this.elements();
    return parsed ? sortCidrTexts(parsed.entries.keys()) : [];
  }

  protected async flushNow(): Promise<void> {
    // `add` first so the `delete` cannot fail on a missing table; one transaction.
    await this.transaction(`add table inet ${this.layout.table}\ndelete table inet ${this.layout.table}\n`);
    this.log.info({ table: this.layout.table }, 'removed the agent’s nft table');
  }

  async readCounters(): Promise<DropCounters> {
    const json = await this.tableJson();
    return json === undefined ? { packets: 0, bytes: 0 } : parseNftCounters(json);
  }

  async objects(): Promise<OwnedObject[]> {
    const what = `nft table inet ${this.layout.table}`;
    try {
      return [{ what, state: (await this.tableJson()) === undefined ? 'absent' : 'present' }];
    } catch (err) {
      return [{ what, state: 'unreadable', error: (err as Error).message }];
    }
  }

  /** The table without its elements, checked as an apply checks it (see FirewallPlugin.check). */
  async check(): Promise<WatchCheck> {
    const structure = await this.structure();
    return { missing: structure === undefined ? [`nft table inet ${this.layout.table}`] : structure.problems };
  }
}
