import type { Logger } from 'pino';
import { FirewallError, errorMessage } from '../errors.js';
import { toCidr } from '../net/ipv4.js';
import { Serial, createRunner, stderrMatches, withFailingLine } from './exec.js';
import { chooseMode, diffEntries, type EntryDiff } from './diff.js';
import { tempSetName } from './names.js';
import {
  iptablesSetRules,
  ipsetSizing,
  normalizeEntries,
  parseIpsetSave,
  renderIpsetDelta,
  renderIpsetFull,
  sortCidrTexts,
  type IpsetSaveParsed,
  type KernelEntry,
} from './render.js';
import type { ApplyResult, CommandRunner, FirewallEntry, FirewallPlugin, PluginOptions } from './types.js';
import { anyHook, effectiveHooks, iptablesRestore, planHooks, planRemoval, readFilter, removeLeftoverBaseChains, type FilterState } from './xtables.js';

const NO_SUCH_SET = /does not exist/i;
const SET_IN_USE = /in use/i;
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
export class IpsetPlugin implements FirewallPlugin {
  readonly name = 'ipset' as const;
  private readonly runner: CommandRunner;
  private readonly log: Logger;
  private readonly setName: string;
  private readonly tempName: string;
  private readonly chain: string;
  private appliedOnce = false;
  private prefetched: { at: number; read: Promise<KernelRead> } | undefined;
  private readonly serial = new Serial();

  constructor(private readonly options: PluginOptions) {
    this.runner = options.runner ?? createRunner();
    this.log = options.logger;
    this.setName = options.names.setName;
    this.tempName = tempSetName(options.names.setName);
    this.chain = options.names.chainName;
  }

  private async setNames(): Promise<Set<string>> {
    const { stdout } = await this.runner.run('ipset', ['list', '-n']);
    return new Set(stdout.split('\n').map((s) => s.trim()).filter(Boolean));
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

  apply(entries: readonly FirewallEntry[]): Promise<ApplyResult> {
    return this.serial.run(async () => {
      const pre = this.prefetched;
      this.prefetched = undefined;
      if (!pre || Date.now() - pre.at > PREFETCH_MAX_AGE_MS) return this.applyNow(entries, this.readKernel());
      try {
        return await this.applyNow(entries, pre.read.catch(() => this.readKernel()));
      } catch (err) {
        // Someone may have changed the objects since the read (a firewall reload):
        // read them again and apply once more, on what is there now.
        this.log.warn({ err: errorMessage(err) }, 'apply failed on the state read at the start of the cycle; reading it again and retrying once');
        return this.applyNow(entries, this.readKernel());
      }
    });
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
  private async applyNow(entries: readonly FirewallEntry[], read: Promise<KernelRead>): Promise<ApplyResult> {
    read.catch(() => undefined); // awaited below, after the validation (which may throw first)
    const wanted = normalizeEntries(entries);
    const { current, filter, at: readAt } = await read;
    const setExists = current !== undefined;

    // Nothing of ours anywhere and never applied by this instance: a first
    // install (or a reboot), so creations are not "repairs".
    const fresh = !this.appliedOnce && !setExists && !filter.chains.has(this.chain) && !anyHook(filter, this.chain);
    const repaired: string[] = [];
    const note = (what: string) => {
      if (!fresh) repaired.push(what);
    };

    // --- the set
    const sizing = ipsetSizing(this.options.capacity, wanted.length);
    let forceFull = false;
    if (!current) {
      note(`ipset set ${this.setName}`);
      forceFull = true;
    } else {
      this.checkSetType(current);
      const maxelem = Number(current.createOptions.get('maxelem') ?? '65536');
      if (!current.createOptions.has('timeout')) {
        note(`ipset set ${this.setName} timeout support`);
        forceFull = true;
      } else if (maxelem < wanted.length) {
        forceFull = true; // grow: the swapped-in set is sized for the new count
      } else if (current.odd > 0) {
        note(`ipset set ${this.setName}: ${current.odd} foreign entries`);
        forceFull = true;
      }
    }
    const currentEntries = current?.entries ?? new Map<string, number | undefined>();
    const diff = diffEntries(currentEntries, wanted, Math.max(0, (Date.now() - readAt) / 1000));
    const mode = chooseMode(diff, currentEntries.size, wanted.length, forceFull);

    if (mode === 'full') {
      await this.replace(wanted, sizing, setExists);
    } else if (mode === 'delta') {
      await this.delta(diff, current!);
    }

    // --- chain, rule, hooks (after the set: the rule needs the set to exist)
    await this.ensureChain(filter, note);

    this.appliedOnce = true;
    if (fresh) this.log.info({ set: this.setName, chain: this.chain }, 'created ipset set and iptables chain');
    if (repaired.length > 0) this.log.warn({ repaired }, 'firewall objects were missing or altered and have been re-created');
    if (mode !== 'none') {
      this.log.info({ mode, added: diff.added, removed: diff.removed, updated: diff.updated, size: wanted.length }, 'ipset set updated');
    }
    return { added: diff.added, removed: diff.removed, updated: diff.updated, mode, repaired };
  }

  private checkSetType(current: IpsetSaveParsed): void {
    const family = current.createOptions.get('family') ?? 'inet';
    if (current.type !== 'hash:net' || family !== 'inet') {
      // ipset can only swap sets of the same type and family, and the set is in
      // use by our rule: do not guess, tell the operator.
      throw new FirewallError(
        `ipset set ${this.setName} exists with type ${current.type ?? '?'} family ${family}, expected hash:net family inet; ` +
          `remove it (ipset destroy ${this.setName}, after removing rules that use it) or choose another set_name`,
      );
    }
  }

  /** Build the temp set and swap it in, in one `ipset restore`. */
  private async replace(entries: readonly KernelEntry[], sizing: ReturnType<typeof ipsetSizing>, setExists: boolean) {
    // The temp set is normally absent, so nobody asks first (a process saved on every rebuild);
    // one left by a run killed mid-apply makes line 1 fail: it is removed and the script run again.
    for (let attempt = 0; ; attempt++) {
      const input = renderIpsetFull({ setName: this.setName, tempName: this.tempName, sizing, setExists }, entries);
      try {
        await this.runner.run('ipset', ['restore'], { input });
        return;
      } catch (err) {
        if (attempt === 0 && stderrMatches(err, TEMP_LEFT_OVER)) {
          await this.runner.run('ipset', ['destroy', this.tempName]); // in use by a foreign rule: that error is the answer
          continue;
        }
        // The swap is the last step, so the live set still holds the previous entries.
        await this.destroyQuietly(this.tempName);
        throw withFailingLine(err, input, IPSET_LINE);
      }
    }
  }

  private async delta(diff: EntryDiff, previous: IpsetSaveParsed) {
    const input = renderIpsetDelta(this.setName, diff.add, diff.del);
    try {
      await this.runner.run('ipset', ['-exist', 'restore'], { input });
    } catch (caught) {
      const err = withFailingLine(caught, input, IPSET_LINE);
      // ipset applies restore lines one by one: put the previous contents back
      // (atomically, via the temp set) before reporting the failure.
      const before: KernelEntry[] = [];
      for (const [text, timeout] of previous.entries) {
        const cidr = toCidr(text);
        if (cidr) before.push({ cidr, timeout });
      }
      try {
        await this.replace(before, ipsetSizing(this.options.capacity, before.length), true);
        this.log.warn({ err: errorMessage(err) }, 'ipset delta failed; previous set contents restored');
      } catch (rollbackErr) {
        throw new FirewallError(`${errorMessage(err)} (and restoring the previous set failed: ${errorMessage(rollbackErr)})`, {
          command: err instanceof FirewallError ? err.command : undefined,
          stderr: err instanceof FirewallError ? err.stderr : undefined,
          cause: err,
        });
      }
      throw err;
    }
  }

  private async ensureChain(filter: FilterState, note: (what: string) => void): Promise<void> {
    const expected = iptablesSetRules(this.chain, this.setName, this.options.action, this.options.logBlocked);
    const actual = filter.rules.get(this.chain) ?? [];
    const lines: string[] = [];
    if (!filter.chains.has(this.chain)) {
      note(`iptables chain ${this.chain}`);
      lines.push(`:${this.chain} - [0:0]`, ...expected);
    } else if (actual.length !== expected.length || actual.some((r, i) => r !== expected[i])) {
      note(actual.length === 0 ? `rule in iptables chain ${this.chain}` : `rules of iptables chain ${this.chain} (differed from expected)`);
      // Declaring an existing chain under --noflush empties it; -F says so explicitly.
      lines.push(`:${this.chain} - [0:0]`, `-F ${this.chain}`, ...expected);
    }
    const hooks = planHooks(filter, this.chain, effectiveHooks(this.options.hookChains, filter));
    for (const f of hooks.fixes) note(f);
    lines.push(...hooks.lines);
    await iptablesRestore(this.runner, lines);
  }

  async list(): Promise<string[]> {
    try {
      return sortCidrTexts((await this.save()).entries.keys());
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_SET)) return [];
      throw err;
    }
  }

  flush(): Promise<void> {
    return this.serial.run(() => this.flushNow());
  }

  private async flushNow(): Promise<void> {
    this.prefetched = undefined;
    const filter = await readFilter(this.runner);
    const plan = planRemoval(filter, this.chain);
    await iptablesRestore(this.runner, plan.lines);
    const leftovers = await removeLeftoverBaseChains(this.runner, plan.unhooked);
    if (leftovers.length > 0) this.log.debug({ removed: leftovers }, 'removed empty iptables-nft base chains left by the agent’s hooks');
    const names = await this.setNames();
    for (const set of [this.setName, this.tempName]) if (names.has(set)) await this.destroy(set);
    this.log.info({ set: this.setName, chain: this.chain }, 'removed the agent’s ipset set, chain and hooks');
    if (plan.foreign.length > 0) {
      throw new FirewallError(
        `iptables chain ${this.chain} was emptied but not deleted: rules the agent did not create still jump to it: ${plan.foreign.join('; ')}`,
      );
    }
  }

  /** Destroy a set; retry briefly while the kernel still holds a reference from a just-deleted rule. */
  private async destroy(set: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.runner.run('ipset', ['destroy', set]);
        return;
      } catch (err) {
        if (stderrMatches(err, NO_SUCH_SET)) return;
        if (stderrMatches(err, SET_IN_USE)) {
          if (attempt < 20) {
            await new Promise((r) => setTimeout(r, 50));
            continue;
          }
          throw new FirewallError(`ipset set ${set} is still used by a rule the agent did not create; remove that rule, then flush again`, {
            command: err instanceof FirewallError ? err.command : undefined,
            stderr: err instanceof FirewallError ? err.stderr : undefined,
            cause: err,
          });
        }
        throw err;
      }
    }
  }

  private async destroyQuietly(set: string): Promise<void> {
    try {
      await this.runner.run('ipset', ['destroy', set]);
    } catch {
      // absent or in use: nothing to clean up, or nothing we may touch
    }
  }
}
