import { NotOwnedError } from '../../errors.js';
import { diffEntries } from '../diff.js';
import { kernelColumns, kernelList, listingColumns, normalizeEntries, sortCidrTexts } from '../entries.js';
import type { FirewallEntries } from '../entry-columns.js';
import { createRunner } from '../exec.js';
import { KernelPlugin } from '../kernel-plugin.js';
import type { ApplyOptions, ApplyResult, DropCounters, EntryCheck, FirewallPlugin, HitCounter, OwnedObject, PluginOptions, WatchCheck } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import { markerRule } from '../ownership.js';
import { isV01EntryChain } from '../legacy-shapes.js';
import { directionHooks, type Direction } from '../direction.js';
import { XTABLES_WAIT_S, anyHook, effectiveHooks, iptablesRestore, planHooks, readFilter, removeLeftoverBaseChains } from './filter.js';
import { chainCounters, chainObjects, chainOwnership, failIfReferenced, removeOwnedChain } from './owned-chain.js';
import { parseEntryChain, parseEntryHits, pushIptablesEntryRules } from './rules.js';
import { chainCheck } from './check.js';

/** Above this many entries, warn: iptables matches rules one after the other for every packet. */
export const IPTABLES_WARN_ENTRIES = 5000;

/**
 * Fallback backend for hosts without ipset or nft: one iptables rule per
 * entry in the agent's chain (two with logging), hooked like the ipset
 * backend. Every change rebuilds the chain's contents inside ONE
 * `iptables-restore --noflush` run (`-F CHAIN` then `-A` lines, one COMMIT),
 * so packets see the old chain or the new one. No kernel timeouts: entries
 * leave when the agent's next cycle no longer selects them.
 */
export class IptablesPlugin extends KernelPlugin implements FirewallPlugin {
  readonly name = 'iptables' as const;
  private readonly runner: CommandRunner;
  private readonly chain: string;
  private readonly direction: Direction;
  private toldNoTimeouts = false;
  private warnedSize = 0;

  constructor(private readonly options: PluginOptions) {
    super(options.logger);
    this.runner = options.runner ?? createRunner();
    this.chain = options.names.chainName;
    this.direction = options.direction ?? 'both';
  }

  protected async applyNow(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    // One rule per entry: this backend's lists are small, so they are handled as objects.
    const wanted = kernelList(normalizeEntries(entries));
    // Without timeouts each entry is permanent until the next cycle drops it.
    const wantedNoTimeout = wanted.map((e) => ({ cidr: e.cidr, timeout: undefined }));
    if (!this.toldNoTimeouts && wantedNoTimeout.length > 0 && wanted.some((e) => e.timeout !== undefined)) {
      this.log.info('iptables backend has no kernel timeouts: decayed entries are removed at the agent’s next cycle, not on time');
      this.toldNoTimeouts = true;
    }
    // Warn when crossing the threshold, and again when the list has doubled since the last warning.
    if (wanted.length > IPTABLES_WARN_ENTRIES && wanted.length > 2 * this.warnedSize) {
      this.warnedSize = wanted.length;
      this.log.warn(
        { entries: wanted.length, limit: IPTABLES_WARN_ENTRIES },
        'iptables backend: every packet is matched against each rule in turn; install ipset or nftables for large lists',
      );
    }

    const filter = await readFilter(this.runner);
    const owner = chainOwnership(filter, this.chain, this.legacyShape, options.appliedBefore === true);
    // Checked before anything is written: a chain that is not the agent's stays byte-identical.
    if (owner.kind === 'foreign') throw new NotOwnedError(`iptables chain ${this.chain}`, owner.why);
    if (owner.kind === 'legacy') this.log.warn({ chain: this.chain }, `adopting the unmarked iptables chain ${this.chain} an earlier wcf-agent version made (exactly its rules) and marking it as the agent's`);
    const chainExists = owner.kind !== 'absent';
    const repairs = this.repairs(!chainExists && !anyHook(filter, this.chain), options);
    const rules = filter.rules.get(this.chain) ?? [];
    const marked = rules[0] === markerRule(this.chain);
    const contents = parseEntryChain(marked ? rules.slice(1) : rules, this.chain, this.options.action, this.options.logBlocked, this.direction);
    if (!chainExists) repairs.note(`iptables chain ${this.chain}`);
    else if (owner.kind === 'own' && (!marked || !contents.wellFormed)) repairs.note(`rules of iptables chain ${this.chain} (differed from expected)`);
    const diff = diffEntries(listingColumns(contents.entries), kernelColumns(wantedNoTimeout, wantedNoTimeout.length));
    const rebuild = !chainExists || !marked || !contents.wellFormed || diff.added + diff.removed > 0;

    const lines: string[] = [];
    if (rebuild) {
      lines.push(`:${this.chain} - [0:0]`, `-F ${this.chain}`, markerRule(this.chain));
      pushIptablesEntryRules(lines, this.chain, wantedNoTimeout, this.options.action, this.options.logBlocked, this.direction);
    }
    const hooks = planHooks(filter, this.chain, effectiveHooks(directionHooks(this.options.hookChains, this.direction), filter));
    for (const f of hooks.fixes) repairs.note(f);
    lines.push(...hooks.lines);
    await iptablesRestore(this.runner, lines);
    // A hook given up (direction changed) may leave the empty base chain iptables-nft made for it.
    await removeLeftoverBaseChains(this.runner, hooks.unhooked);
    return this.done(repairs, { what: 'iptables chain', fields: { chain: this.chain }, owned: [`iptables chain ${this.chain}`] }, { ...diff, updated: 0 }, rebuild ? 'full' : 'none', wanted.length);
  }

  /** An earlier version's chain: only its per-entry rules, no marker. */
  private readonly legacyShape = (rules: readonly string[]): boolean => isV01EntryChain(rules, this.chain, this.options.action, this.options.logBlocked);

  async list(): Promise<string[]> {
    const filter = await readFilter(this.runner);
    const owner = chainOwnership(filter, this.chain, this.legacyShape, true);
    if (owner.kind === 'foreign') return [];
    const rules = filter.rules.get(this.chain) ?? [];
    const contents = parseEntryChain(rules[0] === markerRule(this.chain) ? rules.slice(1) : rules, this.chain, this.options.action, this.options.logBlocked, this.direction);
    return sortCidrTexts(contents.entries.keys());
  }

  protected async flushNow(): Promise<void> {
    const foreign = await removeOwnedChain(this.runner, this.chain, this.log, this.legacyShape);
    if (foreign === undefined) return;
    this.log.info({ chain: this.chain }, 'removed the agent’s iptables chain and hooks');
    failIfReferenced(this.chain, foreign);
  }

  readCounters(): Promise<DropCounters> {
    return chainCounters(this.runner, this.chain);
  }

  /** Each entry's own rules count its hits, per side. */
  async readHits(): Promise<HitCounter[]> {
    const filter = await readFilter(this.runner);
    if (!filter.chains.has(this.chain)) return [];
    const { stdout } = await this.runner.run('iptables', ['-w', XTABLES_WAIT_S, '-t', 'filter', '-S', this.chain, '-v']);
    return parseEntryHits(stdout);
  }

  async objects(): Promise<OwnedObject[]> {
    return chainObjects(this.runner, this.chain, (filter) => effectiveHooks(directionHooks(this.options.hookChains, this.direction), filter), this.legacyShape);
  }

  /** The chain's entry rules against `entries` (no timeouts here: every one of them must be there). */
  async verify(entriesNow: () => FirewallEntries): Promise<EntryCheck> {
    const entries = entriesNow();
    const started = Date.now();
    const held = new Set(await this.list());
    const wanted = new Set(kernelList(normalizeEntries(entries)).map((e) => e.cidr.text));
    let missing = 0;
    for (const w of wanted) if (!held.has(w)) missing++;
    let extra = 0;
    for (const h of held) if (!wanted.has(h)) extra++;
    return { checked: wanted.size, missing, extra, ms: Date.now() - started };
  }

  /** The chain (its entry rules parsed, as an apply reads them) and the hooks (see FirewallPlugin.check). */
  async check(): Promise<WatchCheck> {
    const filter = await readFilter(this.runner);
    const rules = filter.rules.get(this.chain) ?? [];
    const marked = rules[0] === markerRule(this.chain);
    const contents = parseEntryChain(marked ? rules.slice(1) : rules, this.chain, this.options.action, this.options.logBlocked, this.direction);
    const hooks = directionHooks(this.options.hookChains, this.direction);
    return { missing: chainCheck(filter, this.chain, hooks, marked && contents.wellFormed), entries: contents.entries.size };
  }
}
