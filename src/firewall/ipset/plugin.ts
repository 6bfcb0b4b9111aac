import { FirewallError, NotOwnedError, errorMessage } from '../../errors.js';
import { chooseMode, diffEntries, releaseChanges, type EntryDiff } from '../diff.js';
import { releaseArray } from '../../util/release.js';
import { columnsToMap, lastingEntries, normalizeEntries, sortCidrTexts } from '../entries.js';
import { asColumns, EntryColumns, type FirewallEntries } from '../entry-columns.js';
import { createRunner, stderrMatches, withFailingLine } from '../exec.js';
import { KernelPlugin, type Repairs } from '../kernel-plugin.js';
import { tempSetName } from '../names.js';
import { markerRule } from '../ownership.js';
import { isV01SetChain } from '../legacy-shapes.js';
import { checkSetType, setObjects, setOwnership } from './ownership.js';
import type { ApplyOptions, ApplyResult, DropCounters, EntryCheck, HitCounter, FirewallPlugin, OwnedObject, PluginOptions, WatchCheck } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import { directionHooks, type Direction } from '../direction.js';
import { anyHook, effectiveHooks, iptablesRestore, planHooks, readFilter, removeLeftoverBaseChains, type FilterState } from '../xtables/filter.js';
import { chainCounters, chainObjects, chainOwnership, failIfReferenced, removeOwnedChain } from '../xtables/owned-chain.js';
import { iptablesSetRules } from '../xtables/rules.js';
import { chainCheck, setHeaderCount } from '../xtables/check.js';
import { hitsSetLines, readIpsetHits, unusedHitsSets, usedHitsSets } from './hits.js';
import { NO_SUCH_SET, destroySet, destroySetQuietly, removeOwnedSets } from './remove.js';
import { ipsetDeltaScript, ipsetFullScript, ipsetSizing, parseIpsetSave, type IpsetSaveParsed, type IpsetSizing } from './text.js';

const IPSET_LINE = /Error in line (\d+)/;
/** `ipset restore` on line 1 (creating the temp set) when a temp set of that name is left over. */
const TEMP_LEFT_OVER = /Error in line 1: Set cannot be created: set with the same name already exists/i;
/** A prefetched read older than this is not used (a cycle's pull and selection take seconds at most). */
const PREFETCH_MAX_AGE_MS = 10_000;

interface KernelRead {
  readonly current: IpsetSaveParsed | undefined;
  readonly filter: FilterState;
  /** When the set was read (ms since the epoch): its remaining timeouts are as of then. */
  readonly at: number;
}

/**
 * ipset backend: one `hash:net` set holding every entry (with per-entry
 * timeouts), matched by ONE iptables rule in the agent's chain, which is
 * hooked once into INPUT/FORWARD (and DOCKER-USER when present).
 *
 * Full replacements build a temporary set and swap it in (one `ipset restore`
 * run: create, adds, swap, destroy): the live set changes in one step and is
 * untouched if any line fails. Small changes are one `ipset -exist restore`
 * with del/add lines; if that fails midway, the previous contents (read just
 * before) are swapped back in.
 */
export class IpsetPlugin extends KernelPlugin implements FirewallPlugin {
  readonly name = 'ipset' as const;
  private readonly runner: CommandRunner;
  private readonly setName: string;
  private readonly tempName: string;
  private readonly chain: string;
  private readonly direction: Direction;
  private prefetched: { at: number; read: Promise<KernelRead> } | undefined;

  constructor(private readonly options: PluginOptions) {
    super(options.logger);
    this.runner = options.runner ?? createRunner();
    this.setName = options.names.setName;
    this.tempName = tempSetName(options.names.setName);
    this.chain = options.names.chainName;
    this.direction = options.direction ?? 'both';
  }

  private async save(): Promise<IpsetSaveParsed> {
    const { stdout } = await this.runner.run('ipset', ['save', this.setName]);
    return parseIpsetSave(stdout, this.setName);
  }

  /** Start the kernel read for the next apply (see FirewallPlugin.prefetch). */
  prefetch(): void {
    const read = this.readKernel();
    read.catch(() => undefined); // used (or dropped) by the next apply
    this.prefetched = { at: Date.now(), read };
  }

  /** The set's contents (undefined: no set) and the filter table, read in parallel. */
  private readKernel(): Promise<KernelRead> {
    const at = Date.now();
    return Promise.all([this.saveIfExists(), readFilter(this.runner)]).then(([current, filter]) => ({ current, filter, at }));
  }

  protected async applyNow(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    const pre = this.prefetched;
    this.prefetched = undefined;
    if (!pre || Date.now() - pre.at > PREFETCH_MAX_AGE_MS) return this.applyOn(entries, options, this.readKernel());
    try {
      return await this.applyOn(entries, options, pre.read.catch(() => this.readKernel()));
    } catch (err) {
      // Someone may have changed the objects since the read (a firewall reload):
      // read them again and apply once more, on what is there now.
      this.log.warn({ err: errorMessage(err) }, 'apply failed on the state read at the start of the cycle; reading it again and retrying once');
      return this.applyOn(entries, options, this.readKernel());
    }
  }

  /** The live set's contents, or undefined when it does not exist (any other failure is thrown). */
  private async saveIfExists(): Promise<IpsetSaveParsed | undefined> {
    try {
      return await this.save();
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_SET)) return undefined;
      throw err;
    }
  }

  /**
   * `read`: the kernel state (readKernel, started earlier or just now): one round
   * of two read-only processes, which runs while the entries are validated. Each
   * process costs milliseconds (more from a large parent), and this is every
   * cycle's fixed cost, so nothing else is asked (a temp set left over by a
   * killed run is dealt with by `replace` when it gets in the way).
   */
  private async applyOn(entries: FirewallEntries, options: ApplyOptions, read: Promise<KernelRead>): Promise<ApplyResult> {
    read.catch(() => undefined); // awaited below, after the validation (which may throw first)
    const wanted = normalizeEntries(entries);
    const { current, filter, at: readAt } = await read;
    // Both owners are checked before anything is written: what is not the agent's stays byte-identical.
    const setOwner = setOwnership(current, this.options.instance, this.setName);
    if (setOwner.kind === 'foreign') throw new NotOwnedError(`ipset set ${this.setName}`, setOwner.why);
    const chainOwner = chainOwnership(filter, this.chain, this.legacyChain, options.appliedBefore === true);
    if (chainOwner.kind === 'foreign') throw new NotOwnedError(`iptables chain ${this.chain}`, chainOwner.why);
    for (const [kind, what] of [[setOwner.kind, `ipset set ${this.setName}`], [chainOwner.kind, `iptables chain ${this.chain}`]] as const) {
      if (kind === 'legacy') this.log.warn(`adopting the unmarked ${what} an earlier wcf-agent version made (exactly its shape) and marking it as the agent's`);
    }
    const setExists = current !== undefined;
    const repairs = this.repairs(!setExists && !filter.chains.has(this.chain) && !anyHook(filter, this.chain), options);

    // --- the set, sized for the capacity in force: resized (by the swap of a
    // full rebuild) only when that capacity changes, not as the entries grow.
    const sizing = ipsetSizing(options.capacity, wanted.length);
    let forceFull = false;
    if (!current) {
      repairs.note(`ipset set ${this.setName}`);
      forceFull = true;
    } else {
      checkSetType(current, this.setName);
      if (!current.marked) {
        forceFull = true; // an adopted set is rebuilt with the marker (the swap keeps it live throughout)
      } else if (!current.createOptions.has('timeout')) {
        repairs.note(`ipset set ${this.setName} timeout support`);
        forceFull = true;
      } else if (Number(current.createOptions.get('maxelem') ?? '65536') !== sizing.maxelem) {
        forceFull = true; // resize: the swapped-in set is sized for the capacity now in force
      } else if (current.odd > 0) {
        repairs.note(`ipset set ${this.setName}: ${current.odd} foreign entries`);
        forceFull = true;
      }
    }
    const currentEntries = current?.entries ?? new EntryColumns(1);
    const diff = diffEntries(currentEntries, wanted, Math.max(0, (Date.now() - readAt) / 1000));
    const mode = chooseMode(diff, currentEntries.length, wanted.length, forceFull);
    // A rebuild reads neither the listing nor the changes again: freed before its script is built.
    if (mode === 'full') {
      releaseChanges(diff, wanted);
      currentEntries.release();
    }

    // Intact rules name the hits sets, and a set named by a rule cannot be
    // destroyed: they exist. Only a rewrite of the rules has to make sure, in
    // the set's own restore when there is one (no process of its own).
    const rewrite = this.rulesNeedRewrite(filter);
    const hitsLines = rewrite ? hitsSetLines(this.setName, this.direction) : [];
    if (mode === 'full') {
      await this.replace(wanted, sizing, setExists, hitsLines);
    } else {
      if (mode === 'delta') await this.delta(diff, current!, sizing);
      if (hitsLines.length > 0) await this.runner.run('ipset', ['restore'], { input: hitsLines.join('\n') + '\n' });
    }

    // --- chain, rule, hooks (after the set: the rule needs the set to exist)
    await this.ensureChain(filter, repairs, chainOwner.kind === 'legacy', rewrite);
    return this.done(repairs, { what: 'ipset set and iptables chain', fields: { set: this.setName, chain: this.chain }, owned: [`ipset set ${this.setName}`, `iptables chain ${this.chain}`] }, diff, mode, wanted.length);
  }

  /** Build the temp set and swap it in, in one `ipset restore`. */
  private async replace(entries: EntryColumns, sizing: IpsetSizing, setExists: boolean, after: readonly string[] = []) {
    // The temp set is normally absent, so nobody asks first (a process saved on every rebuild);
    // one left by a run killed mid-apply makes line 1 fail: it is removed and the script run again.
    for (let attempt = 0; ; attempt++) {
      const input = ipsetFullScript({ setName: this.setName, tempName: this.tempName, sizing, setExists, after, ...(this.options.instance ? { instance: this.options.instance } : {}) }, entries);
      try {
        await this.runner.run('ipset', ['restore'], { input });
        releaseArray(input); // its bytes are in the kernel now
        return;
      } catch (err) {
        if (attempt === 0 && stderrMatches(err, TEMP_LEFT_OVER)) {
          await this.runner.run('ipset', ['destroy', this.tempName]); // in use by a foreign rule: that error is the answer
          continue;
        }
        // The swap is the last step, so the live set still holds the previous entries.
        await destroySetQuietly(this.runner, this.tempName);
        throw withFailingLine(err, input, IPSET_LINE);
      }
    }
  }

  private async delta(diff: EntryDiff, previous: IpsetSaveParsed, sizing: IpsetSizing) {
    const input = ipsetDeltaScript(this.setName, diff.add, diff.del);
    try {
      await this.runner.run('ipset', ['-exist', 'restore'], { input });
      releaseArray(input);
    } catch (caught) {
      const err = withFailingLine(caught, input, IPSET_LINE);
      // ipset applies restore lines one by one: put the previous contents back
      // (atomically, via the temp set) before reporting the failure.
      try {
        await this.replace(previous.entries, sizing, true);
        this.log.warn({ err: errorMessage(err) }, 'ipset delta failed; previous set contents restored');
      } catch (rollbackErr) {
        throw FirewallError.rewrap(err, `${errorMessage(err)} (and restoring the previous set failed: ${errorMessage(rollbackErr)})`);
      }
      throw err;
    }
  }

  /** An earlier version's chain: exactly its set rule(s), without the marker. */
  private readonly legacyChain = (rules: readonly string[]): boolean =>
    isV01SetChain(rules, this.chain, this.setName, this.options.action, this.options.logBlocked);

  private expectedRules(): string[] {
    return [markerRule(this.chain), ...iptablesSetRules(this.chain, this.setName, this.options.action, this.options.logBlocked, this.direction)];
  }

  /** The chain is missing or its rules differ from the ones the settings in force give. */
  private rulesNeedRewrite(filter: FilterState): boolean {
    const expected = this.expectedRules();
    const actual = filter.rules.get(this.chain) ?? [];
    return !filter.chains.has(this.chain) || actual.length !== expected.length || actual.some((r, i) => r !== expected[i]);
  }

  private async ensureChain(filter: FilterState, repairs: Repairs, adopting: boolean, rewrite: boolean): Promise<void> {
    const expected = this.expectedRules();
    const actual = filter.rules.get(this.chain) ?? [];
    const lines: string[] = [];
    if (!filter.chains.has(this.chain)) {
      repairs.note(`iptables chain ${this.chain}`);
      lines.push(`:${this.chain} - [0:0]`, ...expected);
    } else if (rewrite) {
      if (!adopting) repairs.note(actual.length === 0 ? `rule in iptables chain ${this.chain}` : `rules of iptables chain ${this.chain} (differed from expected)`);
      // Declaring an existing chain under --noflush empties it; -F says so explicitly.
      lines.push(`:${this.chain} - [0:0]`, `-F ${this.chain}`, ...expected);
    }
    const hooks = planHooks(filter, this.chain, effectiveHooks(directionHooks(this.options.hookChains, this.direction), filter));
    for (const f of hooks.fixes) repairs.note(f);
    lines.push(...hooks.lines);
    // One commit: the chain's new rules and hooks replace the old ones together (no unenforced moment).
    await iptablesRestore(this.runner, lines);
    // A hook given up (direction changed) may leave the empty base chain iptables-nft made for it.
    await removeLeftoverBaseChains(this.runner, hooks.unhooked);
    // A side given up (direction changed) leaves its hits set unused: removed, if it is there.
    if (rewrite) for (const name of unusedHitsSets(this.setName, this.direction)) await destroySet(this.runner, name);
  }

  async list(): Promise<string[]> {
    return sortCidrTexts((await this.listTimeouts()).keys());
  }

  async listTimeouts(): Promise<ReadonlyMap<string, number | undefined>> {
    try {
      const parsed = await this.save();
      return setOwnership(parsed, this.options.instance, this.setName).kind === 'foreign' ? new Map<string, number | undefined>() : columnsToMap(parsed.entries);
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_SET)) return new Map<string, number | undefined>();
      throw err;
    }
  }

  protected async flushNow(): Promise<void> {
    this.prefetched = undefined;
    const foreign = await removeOwnedChain(this.runner, this.chain, this.log, this.legacyChain);
    const removed: string[] = foreign === undefined ? [] : [`iptables chain ${this.chain}`];
    removed.push(...(await removeOwnedSets(this.runner, this.setName, this.tempName, this.log, this.options.instance)));
    if (removed.length > 0) this.log.info({ removed }, 'removed the agent’s objects');
    if (foreign !== undefined) failIfReferenced(this.chain, foreign);
  }

  readCounters(): Promise<DropCounters> {
    return chainCounters(this.runner, this.chain);
  }

  readHits(): Promise<HitCounter[]> {
    return readIpsetHits(this.runner, this.setName, this.direction);
  }

  /** The set, its hits sets, the chain and each hook (read-only). */
  async objects(): Promise<OwnedObject[]> {
    const hooks = (filter: FilterState) => effectiveHooks(directionHooks(this.options.hookChains, this.direction), filter);
    const sets = await setObjects(this.runner, this.setName, usedHitsSets(this.setName, this.direction));
    return [...sets, ...(await chainObjects(this.runner, this.chain, hooks, this.legacyChain))];
  }

  /**
   * From the set's header: its entry count against the entries that should be there (the marker
   * element counts one). Entries that expired are counted by the kernel until its garbage
   * collection removes them, so a deletion hides behind as many of those; an extra entry
   * cannot be told from them at all (see docs/firewall.md).
   */
  async verify(entriesNow: () => FirewallEntries): Promise<EntryCheck> {
    const entries = entriesNow();
    const started = Date.now();
    const wanted = lastingEntries(asColumns(entries)).length;
    const count = await setHeaderCount(this.runner, this.setName);
    const held = count === undefined ? 0 : Math.max(0, count - 1);
    return { checked: wanted, missing: Math.max(0, wanted - held), extra: 0, ms: Date.now() - started };
  }

  /** The set's header (not its entries), the chain, its rule and the hooks (see FirewallPlugin.check). */
  async check(): Promise<WatchCheck> {
    const [entries, filter] = await Promise.all([setHeaderCount(this.runner, this.setName), readFilter(this.runner)]);
    const rulesOk = !this.rulesNeedRewrite(filter);
    const missing = entries === undefined ? [`ipset set ${this.setName}`] : [];
    missing.push(...chainCheck(filter, this.chain, directionHooks(this.options.hookChains, this.direction), rulesOk));
    return entries === undefined ? { missing } : { missing, entries };
  }
}
