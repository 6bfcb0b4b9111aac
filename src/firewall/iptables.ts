import type { Logger } from 'pino';
import { FirewallError } from '../errors.js';
import { diffEntries } from './diff.js';
import { Serial, createRunner } from './exec.js';
import { toCidr } from '../net/ipv4.js';
import { IPT_LOG, iptablesTarget, normalizeEntries, pushIptablesEntryRules, sortCidrTexts } from './render.js';
import type { ApplyResult, CommandRunner, FirewallEntry, FirewallPlugin, PluginOptions } from './types.js';
import { anyHook, effectiveHooks, iptablesRestore, planHooks, planRemoval, readFilter, removeLeftoverBaseChains, type FilterState } from './xtables.js';

/** Above this many entries, warn: iptables matches rules one after the other for every packet. */
export const IPTABLES_WARN_ENTRIES = 5000;


interface ChainContents {
  /** Canonical CIDRs blocked by the chain's rules. */
  readonly entries: Map<string, undefined>;
  /** The rules are exactly what the agent would write for these entries. */
  readonly wellFormed: boolean;
}

/**
 * Read the agent chain's `-A CHAIN -s X ...` lines back. iptables prints
 * `-s 192.0.2.7/32` for an address and may reorder nothing else; any rule the
 * agent would not have written makes the chain "not well formed" (rebuilt).
 */
export function parseEntryChain(lines: readonly string[], chain: string, action: 'DROP' | 'REJECT', logBlocked: boolean): ChainContents {
  const entries = new Map<string, undefined>();
  const target = iptablesTarget(action);
  const otherTarget = iptablesTarget(action === 'REJECT' ? 'DROP' : 'REJECT');
  const head = `-A ${chain} -s `;
  let wellFormed = true;
  let pendingLog: string | undefined;
  for (const line of lines) {
    if (!line.startsWith(head)) {
      wellFormed = false;
      continue;
    }
    const rest = line.slice(head.length);
    const space = rest.indexOf(' ');
    const cidr = toCidr(space === -1 ? rest : rest.slice(0, space));
    const spec = space === -1 ? '' : rest.slice(space + 1);
    if (!cidr) {
      wellFormed = false;
      continue;
    }
    if (logBlocked && spec === IPT_LOG) {
      if (pendingLog !== undefined) wellFormed = false;
      pendingLog = cidr.text;
    } else if (spec === target || spec === otherTarget) {
      if (spec !== target) wellFormed = false;
      if (logBlocked && pendingLog !== cidr.text) wellFormed = false;
      pendingLog = undefined;
      if (entries.has(cidr.text)) wellFormed = false;
      entries.set(cidr.text, undefined);
    } else {
      wellFormed = false;
    }
  }
  if (pendingLog !== undefined) wellFormed = false;
  return { entries, wellFormed };
}

/**
 * Fallback backend for hosts without ipset or nft: one iptables rule per
 * entry in the agent's chain (two with logging), hooked like the ipset
 * backend. Every change rebuilds the chain's contents inside ONE
 * `iptables-restore --noflush` run (`-F CHAIN` then `-A` lines, one COMMIT),
 * so packets see the old chain or the new one. No kernel timeouts: entries
 * leave when the agent's next cycle no longer selects them.
 */
export class IptablesPlugin implements FirewallPlugin {
  readonly name = 'iptables' as const;
  private readonly runner: CommandRunner;
  private readonly log: Logger;
  private readonly chain: string;
  private appliedOnce = false;
  private toldNoTimeouts = false;
  private warnedSize = 0;
  private readonly serial = new Serial();

  constructor(private readonly options: PluginOptions) {
    this.runner = options.runner ?? createRunner();
    this.log = options.logger;
    this.chain = options.names.chainName;
  }

  apply(entries: readonly FirewallEntry[]): Promise<ApplyResult> {
    return this.serial.run(() => this.applyNow(entries));
  }

  private async applyNow(entries: readonly FirewallEntry[]): Promise<ApplyResult> {
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
    const fresh = !this.appliedOnce && !filter.chains.has(this.chain) && !anyHook(filter, this.chain);
    const repaired: string[] = [];
    const note = (what: string) => {
      if (!fresh) repaired.push(what);
    };

    const chainExists = filter.chains.has(this.chain);
    const contents = parseEntryChain(filter.rules.get(this.chain) ?? [], this.chain, this.options.action, this.options.logBlocked);
    if (!chainExists) note(`iptables chain ${this.chain}`);
    else if (!contents.wellFormed) note(`rules of iptables chain ${this.chain} (differed from expected)`);
    const diff = diffEntries(contents.entries, wantedNoTimeout);
    const rebuild = !chainExists || !contents.wellFormed || diff.added + diff.removed > 0;

    const lines: string[] = [];
    if (rebuild) {
      lines.push(`:${this.chain} - [0:0]`, `-F ${this.chain}`);
      pushIptablesEntryRules(lines, this.chain, wantedNoTimeout, this.options.action, this.options.logBlocked);
    }
    const hooks = planHooks(filter, this.chain, effectiveHooks(this.options.hookChains, filter));
    for (const f of hooks.fixes) note(f);
    lines.push(...hooks.lines);
    await iptablesRestore(this.runner, lines);

    this.appliedOnce = true;
    if (fresh) this.log.info({ chain: this.chain }, 'created iptables chain');
    if (repaired.length > 0) this.log.warn({ repaired }, 'firewall objects were missing or altered and have been re-created');
    const mode = rebuild ? 'full' : 'none';
    if (rebuild) this.log.info({ mode, added: diff.added, removed: diff.removed, size: wanted.length }, 'iptables chain rebuilt');
    return { added: diff.added, removed: diff.removed, updated: 0, mode, repaired };
  }

  async list(): Promise<string[]> {
    const filter: FilterState = await readFilter(this.runner);
    const lines = filter.rules.get(this.chain) ?? [];
    const contents = parseEntryChain(lines, this.chain, this.options.action, this.options.logBlocked);
    return sortCidrTexts(contents.entries.keys());
  }

  flush(): Promise<void> {
    return this.serial.run(() => this.flushNow());
  }

  private async flushNow(): Promise<void> {
    const filter = await readFilter(this.runner);
    const plan = planRemoval(filter, this.chain);
    await iptablesRestore(this.runner, plan.lines);
    const leftovers = await removeLeftoverBaseChains(this.runner, plan.unhooked);
    if (leftovers.length > 0) this.log.debug({ removed: leftovers }, 'removed empty iptables-nft base chains left by the agent’s hooks');
    this.log.info({ chain: this.chain }, 'removed the agent’s iptables chain and hooks');
    if (plan.foreign.length > 0) {
      throw new FirewallError(
        `iptables chain ${this.chain} was emptied but not deleted: rules the agent did not create still jump to it: ${plan.foreign.join('; ')}`,
      );
    }
  }
}
