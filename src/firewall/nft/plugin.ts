import { NotOwnedError } from '../../errors.js';
import { chooseMode, diffEntries, releaseChanges } from '../diff.js';
import { releaseArray } from '../../util/release.js';
import { columnsToMap, normalizeEntries, sortCidrTexts } from '../entries.js';
import { EntryColumns, type FirewallEntries } from '../entry-columns.js';
import { createRunner, stderrMatches } from '../exec.js';
import { KernelPlugin } from '../kernel-plugin.js';
import { OWNER_MARK, type Ownership } from '../ownership.js';
import { isV01NftTable } from '../legacy-shapes.js';
import { hitsSetName, sides } from '../direction.js';
import type { ApplyOptions, ApplyResult, DropCounters, HitCounter, FirewallPlugin, OwnedObject, PluginOptions, WatchCheck } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import { parseNftCounters } from './json.js';
import { deltaReshapesIntervals, resolveOverlaps } from './overlaps.js';
import { checkNftStructure, type NftStructure } from './structure.js';
import { NFT_REFUSE_CHAIN, nftLayout, parseNftHits, parseNftSetJson, nftDeltaScript, nftRecreateScript, nftRefillScript, type NftLayout, type NftSetParsed } from './text.js';

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
    this.layout = nftLayout(options);
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
  private async structure(): Promise<(NftStructure & { v01?: boolean }) | undefined> {
    const json = await this.tableJson();
    if (json === undefined) return undefined;
    const structure = checkNftStructure(json, this.layout);
    if (structure.marked) return structure;
    // The set (which carries the marker in JSON) may be what someone deleted; nft 1.0.6
    // prints the table's own comment only in the text listing, so look there before
    // calling the table unmarked.
    const text = await this.runner.run('nft', ['-t', 'list', 'table', 'inet', this.layout.table]).catch(() => undefined);
    const marked = text !== undefined && text.stdout.split('\n').slice(0, 3).some((l) => l.trim() === `comment "${OWNER_MARK}"`);
    // 0.1 hooked input and forward only (no output, no hit counters, no marker).
    const v01 = !marked && isV01NftTable(json, this.layout.table, this.layout.set, this.layout.hooks.filter((h) => h !== 'output'));
    return { ...structure, marked, v01 };
  }

  /** Elements of the set, or undefined when the set (or table) does not exist. */
  private async elements(): Promise<NftSetParsed | undefined> {
    const json = await this.listJson(['list', 'set', 'inet', this.layout.table, this.layout.set]);
    return json === undefined ? undefined : parseNftSetJson(json);
  }

  /** Whose table is `inet <table_name>` (see ownership.ts), from its terse listing. */
  private ownership(structure: (NftStructure & { v01?: boolean }) | undefined): Ownership {
    if (structure === undefined) return { kind: 'absent' };
    if (structure.marked) return { kind: 'own' };
    if (structure.v01) return { kind: 'legacy' };
    return { kind: 'foreign', why: `no "wcf-agent" comment, and it differs from the table the agent makes: ${structure.problems.join('; ')}` };
  }

  private get tableWhat(): string {
    return `nft table inet ${this.layout.table}`;
  }

  private async transaction(script: string | Buffer): Promise<void> {
    await this.runner.run('nft', ['-f', '-'], { input: script });
    if (typeof script !== 'string') releaseArray(script); // in the kernel now: a million elements' text freed before the report
  }

  protected async applyNow(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    const wanted = resolveOverlaps(normalizeEntries(entries));
    const structure = await this.structure();
    const owner = this.ownership(structure);
    // Checked before anything is written: a table that is not the agent's stays byte-identical.
    if (owner.kind === 'foreign') throw new NotOwnedError(this.tableWhat, owner.why);
    const repairs = this.repairs(structure === undefined, options);
    if (structure === undefined) repairs.note(`nft table inet ${this.layout.table}`);
    else for (const p of structure.problems) repairs.note(p);
    // An earlier version's table is re-created with the marker (its entries are the wanted ones).
    const intact = owner.kind === 'own' && structure !== undefined && structure.problems.length === 0;
    if (owner.kind === 'legacy') this.log.warn({ table: this.layout.table }, `adopting the unmarked ${this.tableWhat} an earlier wcf-agent version made (exactly its shape) and marking it as the agent's`);
    // A broken table may still hold a readable set: read it for the counts.
    const current = structure?.setReadable ? await this.elements() : undefined;
    const currentEntries = current?.entries ?? new EntryColumns(1);
    const diff = diffEntries(currentEntries, wanted);
    const reshapes = deltaReshapesIntervals(diff.add, diff.del);
    const mode = chooseMode(diff, currentEntries.length, wanted.length, !intact || (current?.nonCidr ?? 0) > 0 || reshapes);
    // A refill reads neither the listing nor the changes again: freed before its script is built.
    if (mode === 'full') {
      releaseChanges(diff, wanted);
      currentEntries.release();
    }

    if (!intact) await this.transaction(nftRecreateScript(this.layout, wanted));
    else if (mode === 'full') await this.transaction(nftRefillScript(this.layout, wanted));
    else if (mode === 'delta') await this.transaction(nftDeltaScript(this.layout, diff.add, diff.del));

    return this.done(repairs, { what: 'nft table', fields: { table: this.layout.table, set: this.layout.set }, owned: [this.tableWhat] }, diff, mode, wanted.length);
  }

  async list(): Promise<string[]> {
    if (this.ownership(await this.structure()).kind === 'foreign') return [];
    const parsed = await this.elements();
    return parsed ? sortCidrTexts(parsed.entries.texts()) : [];
  }

  async listTimeouts(): Promise<ReadonlyMap<string, number | undefined>> {
    const parsed = await this.elements();
    return parsed ? columnsToMap(parsed.entries) : new Map<string, number | undefined>();
  }

  protected async flushNow(): Promise<void> {
    const owner = this.ownership(await this.structure());
    if (owner.kind === 'absent') return;
    if (owner.kind === 'foreign') {
      this.log.warn({ table: this.layout.table }, `${this.tableWhat} is not the agent's (${owner.why}); left as it is`);
      return;
    }
    // `add` first so the `delete` cannot fail on a missing table; one transaction.
    await this.transaction(`add table inet ${this.layout.table}\ndelete table inet ${this.layout.table}\n`);
    this.log.info({ table: this.layout.table }, 'removed the agent’s nft table');
  }

  async readCounters(): Promise<DropCounters> {
    const json = await this.tableJson();
    return json === undefined ? { packets: 0, bytes: 0 } : parseNftCounters(json);
  }

  async readHits(): Promise<HitCounter[]> {
    const out: HitCounter[] = [];
    for (const side of sides(this.layout.direction)) {
      const json = await this.listJson(['list', 'set', 'inet', this.layout.table, hitsSetName(this.layout.set, side)]);
      if (json !== undefined) out.push(...parseNftHits(json, side));
    }
    return out;
  }

  /**
   * The table, then each part of it the agent writes: the set, the hits set of
   * each side in use, the refuse chain (REJECT), each hook's base chain. A part
   * missing, or a chain without its rules, blocks nothing: it is listed as absent.
   */
  async objects(): Promise<OwnedObject[]> {
    const what = this.tableWhat;
    const t = this.layout.table;
    const parts: Array<[string, string]> = [
      [`nft set ${this.layout.set}`, `nft set inet ${t} ${this.layout.set}`],
      ...sides(this.layout.direction).map((side): [string, string] => {
        const name = hitsSetName(this.layout.set, side);
        return [`nft set ${name}`, `nft set inet ${t} ${name}`];
      }),
      ...(this.layout.action === 'REJECT' ? [[`nft chain ${NFT_REFUSE_CHAIN}`, `nft chain inet ${t} ${NFT_REFUSE_CHAIN}`] as [string, string]] : []),
      ...this.layout.hooks.map((h): [string, string] => [`nft chain ${h}`, `nft chain inet ${t} ${h}`]),
    ];
    const all = (state: OwnedObject['state'], error?: string): OwnedObject[] => parts.map(([, w]) => ({ what: w, state, ...(error ? { error } : {}) }));
    let structure: NftStructure | undefined;
    try {
      structure = await this.structure();
    } catch (err) {
      return [{ what, state: 'unreadable', error: (err as Error).message }, ...all('unreadable', (err as Error).message)];
    }
    const owner = this.ownership(structure);
    if (owner.kind === 'absent') return [{ what, state: 'absent' }, ...all('absent')];
    if (owner.kind === 'foreign') return [{ what, state: 'foreign', error: owner.why }, ...all('foreign', 'in a table that is not the agent\'s')];
    const problems = new Set(structure!.problems);
    const known = new Set(parts.map(([p]) => p));
    return [
      { what, state: 'present' },
      ...parts.map(([p, w]): OwnedObject => ({ what: w, state: problems.has(p) ? 'absent' : 'present' })),
      ...structure!.problems.filter((p) => !known.has(p)).map((p): OwnedObject => ({ what: p, state: 'absent' })),
    ];
  }

  /** The table without its elements, checked as an apply checks it (see FirewallPlugin.check). */
  async check(): Promise<WatchCheck> {
    const structure = await this.structure();
    return { missing: structure === undefined ? [`nft table inet ${this.layout.table}`] : structure.problems };
  }
}
