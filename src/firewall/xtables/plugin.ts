import { diffEntries } from '../diff.js';
import { normalizeEntries, sortCidrTexts } from '../entries.js';
import { createRunner } from '../exec.js';
import { KernelPlugin } from '../kernel-plugin.js';
import type { ApplyOptions, ApplyResult, CommandRunner, DropCounters, FirewallEntry, FirewallPlugin, OwnedObject, PluginOptions, WatchCheck } from '../plugin.js';
import { chainCheck } from './check.js';
import { anyHook, effectiveHooks, iptablesRestore, planHooks, readFilter } from './filter.js';
import { chainCounters, chainObject, failIfReferenced, removeOwnedChain } from './owned-chain.js';
import { parseEntryChain, pushIptablesEntryRules } from './rules.js';

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
  private toldNoTimeouts = false;
  private warnedSize = 0;

  constructor(private readonly options: PluginOptions) {
    super(options.logger);
    this.runner = options.runner ?? createRunner();
    this.chain = options.names.chainName;
  }

  protected async applyNow(entries: readonly FirewallEntry[], options: ApplyOptions): Promise<ApplyResult> {
    const wanted = normalizeEntries(entries);
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
    const chainExists = filter.chains.has(this.chain);
    const repairs = this.repairs(!chainExists && !anyHook(filter, this.chain), options);
    const contents = parseEntryChain(filter.rules.get(this.chain) ?? [], this.chain, this.options.action, this.options.logBlocked);
    if (!chainExists) repairs.note(`iptables chain ${this.chain}`);
    else if (!contents.wellFormed) repairs.note(`rules of iptables chain ${this.chain} (differed from expected)`);
    const diff = diffEntries(contents.entries, wantedNoTimeout);
    const rebuild = !chainExists || !contents.wellFormed || diff.added + diff.removed > 0;

    const lines: string[] = [];
    if (rebuild) {
      lines.push(`:${this.chain} - [0:0]`, `-F ${this.chain}`);
      pushIptablesEntryRules(lines, this.chain, wantedNoTimeout, this.options.action, this.options.logBlocked);
    }
    const hooks = planHooks(filter, this.chain, effectiveHooks(this.options.hookChains, filter));
    for (const f of hooks.fixes) repairs.note(f);
    lines.push(...hooks.lines);
    await iptablesRestore(this.runner, lines);
    return this.done(repairs, { what: 'iptables chain', fields: { chain: this.chain } }, { ...diff, updated: 0 }, rebuild ? 'full' : 'none', wanted.length);
  }

  async list(): Promise<string[]> {
    const filter = await readFilter(this.runner);
    const contents = parseEntryChain(filter.rules.get(this.chain) ?? [], this.chain, this.options.action, this.options.logBlocked);
    return sortCidrTexts(contents.entries.keys());
  }

  protected async flushNow(): Promise<void> {
    const foreign = await removeOwnedChain(this.runner, this.chain, this.log);
    this.log.info({ chain: this.chain }, 'removed the agent’s iptables chain and hooks');
    failIfReferenced(this.chain, foreign);
  }

  readCounters(): Promise<DropCounters> {
    return chainCounters(this.runner, this.chain);
  }

  async objects(): Promise<OwnedObject[]> {
    return [await chainObject(this.runner, this.chain)];
  }

  /** The chain (its entry rules parsed, as an apply reads them) and the hooks (see FirewallPlugin.check). */
  async check(): Promise<WatchCheck> {
    const filter = await readFilter(this.runner);
    const contents = parseEntryChain(filter.rules.get(this.chain) ?? [], this.chain, this.options.action, this.options.logBlocked);
    return { missing: chainCheck(filter, this.chain, this.options.hookChains, contents.wellFormed), entries: contents.entries.size };
  }
}
