import { NotOwnedError } from '../../errors.js';
import type { Cidr } from '../../net/ipv4.js';
import { chooseMode } from '../diff.js';
import { columnsToMap, normalizeEntries, sortCidrTexts } from '../entries.js';
import { EntryColumns, type FirewallEntries } from '../entry-columns.js';
import { createRunner } from '../exec.js';
import { KernelPlugin } from '../kernel-plugin.js';
import { hitsSetName, sides } from '../direction.js';
import type { ApplyOptions, ApplyResult, DropCounters, EntryCheck, HitCounter, FirewallPlugin, OwnedObject, PluginOptions, WatchCheck } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import { parseNftDrops } from './json.js';
import { asWritten, ledgerDiff, ledgerFor, NftLedger, withSuspects, type SetDiff } from './ledger.js';
import { resolveOverlaps } from './overlaps.js';
import { probeNft } from './table/probe.js';
import { NftReconciler } from './table/reconcile.js';
import { layoutSpan, layoutVariants } from './table/variants.js';
import type { Repairs } from '../kernel-plugin.js';
import { listNftJson, READ_QUICK, readNftSet } from './read.js';
import { lookupNft } from './lookup.js';
import { ownedObjects } from './table/objects.js';
import { cheapOwnership, nftStructure } from './table/owner.js';
import { nftLayout, parseNftHits, splitByShape, type NftLayout, type NftParts, type NftSetParsed } from './text.js';
import { VERIFY_SLICE, verifyNft } from './verify.js';
import { netsChange, runTransactions, transactions, written, type NftRun, type SetChange } from './write.js';

/**
 * The limit of one nft run over `elements` of the agent's sets: a minute, plus what a run of
 * that size may take on a busy host (a million elements were read back in 100-165 s while
 * another tool changed the ruleset every second, past the runner's fixed 180 s).
 */
export function nftTimeoutMs(elements: number): number {
  return 60_000 + Math.ceil(elements * 0.3);
}

/** The limit of one write run: as for its elements, plus what its deletions or refill of networks may cost the kernel (see write.ts). */
export function nftRunTimeoutMs(run: NftRun): number {
  return nftTimeoutMs(run.elements) + Math.ceil(run.slowMs);
}

/**
 * nftables backend: the agent's own table `inet <table_name>` holding a hash
 * set of addresses and an interval set of networks (see NftParts for why
 * two), both with per-element timeouts, and one base chain per hook.
 *
 * What the sets hold is known from the last apply (NftLedger) and the kernel
 * is read back only when that record is in doubt; otherwise an apply checks
 * the objects cheaply (probe.ts, no element read) and sends only the delta.
 * Every change is `nft -f -` runs of at most NFT_CHUNK elements (one run, one
 * kernel transaction, for any ordinary cycle's change), additions before
 * deletions, and never a gap (make before break):
 *
 * - table missing or altered: put right by NftReconciler first (a new table's
 *   chains hooked after all its elements are in; chains rebuilt in place, in
 *   one transaction that keeps the sets; a set that must change its type
 *   rebuilt beside a complete shadow table);
 * - then `add element` / `delete element` per set; networks reshaped
 *   (split or merged) are deleted and re-added in one transaction, and the
 *   networks' set is refilled (`flush set` + its elements, one transaction)
 *   only when it holds ranges someone else put in, or when deleting would cost
 *   the kernel far more (see write.ts).
 *
 * Overlapping networks are resolved before rendering (see resolveOverlaps):
 * the interval set has no auto-merge, so it holds exactly the entries
 * rendered. An address inside a listed network sits in the other set, each
 * with its own timeout: blocked while either lives, as with ipset.
 */
export class NftablesPlugin extends KernelPlugin implements FirewallPlugin {
  readonly name = 'nftables' as const;
  private readonly runner: CommandRunner;
  private readonly layout: NftLayout;
  private readonly ledger: NftLedger;
  private readonly now: () => number;
  private readonly reconciler: NftReconciler;
  /** The most handles a layout of the agent's takes (what the probe asks about, see probe.ts). */
  private readonly span: number;
  private appliedAt = 0;

  constructor(options: PluginOptions) {
    super(options.logger);
    this.runner = options.runner ?? createRunner();
    this.layout = nftLayout(options);
    this.now = options.now ?? Date.now;
    // One record per kernel set for the whole process: a reload builds a new plugin for the same
    // table, and one that only lays out its chains otherwise (direction, action, log_blocked)
    // keeps the sets and their elements, so the record stays true.
    const l = this.layout;
    this.ledger = this.runner.scope === undefined ? new NftLedger(this.now) : ledgerFor(`${this.runner.scope} inet ${l.table} ${l.set}`, this.now);
    const variants = layoutVariants(options);
    this.span = Math.max(layoutSpan(l), ...variants.map(layoutSpan));
    this.reconciler = new NftReconciler(this.runner, l, variants, this.log, nftRunTimeoutMs);
  }

  /** Elements of one set, or undefined when it (or the table) does not exist (see readNftSet); `size`: about how many it holds. */
  private elements(set: string, size = this.ledger.size): Promise<NftSetParsed | undefined> {
    return readNftSet(this.runner, this.layout.table, set, { timeoutMs: nftTimeoutMs(size) });
  }

  private get tableWhat(): string {
    return `nft table inet ${this.layout.table}`;
  }

  /** The wanted entries split by shape, networks without overlaps. */
  private wantedParts(entries: FirewallEntries): NftParts {
    const { hosts, nets } = splitByShape(normalizeEntries(entries));
    return { hosts, nets: resolveOverlaps(nets) };
  }

  protected async applyNow(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult> {
    // The wanted timeouts count from now (the caller computed them a moment ago), not from the end
    // of the apply: recorded with the end time, a million-element apply that took minutes made every
    // timeout look that much longer at the next cycle, and the whole set was sent again.
    this.appliedAt = this.now();
    const wanted = this.wantedParts(entries);
    try {
      const probe = await probeNft(this.runner, this.layout, this.span);
      const repairs = this.repairs(!probe.table, options);
      let fresh = { hosts: false, nets: false };
      let how: Pick<ApplyResult, 'relaid' | 'rebuilt'> = {};
      const doubt = this.ledger.whyDoubt();
      // Whose table it is, before anything is written (a table that is not the agent's stays
      // byte-identical), unless this process wrote it and nothing since gave reason to doubt that.
      if (probe.table && (doubt !== undefined || NftReconciler.needed(probe))) {
        const { owner } = await cheapOwnership(this.runner, this.layout, probe);
        if (owner.kind === 'foreign') throw new NotOwnedError(this.tableWhat, owner.why);
        if (owner.kind === 'legacy') this.log.warn({ table: this.layout.table }, `adopting the unmarked ${this.tableWhat} an earlier wcf-agent version made (exactly its shape) and marking it as the agent's`);
      }
      if (NftReconciler.needed(probe)) {
        const done = await this.reconciler.reconcile(probe, wanted);
        for (const m of done.repaired) repairs.note(m);
        fresh = done.fresh;
        how = { ...(done.relaidFrom ? { relaid: done.relaidFrom } : {}), ...(done.rebuilt ? { rebuilt: done.rebuilt } : {}) };
      }
      const size = wanted.hosts.length + wanted.nets.length;
      if (fresh.hosts && fresh.nets) {
        // Written whole: the kernel holds exactly the record (a full read's worth of certainty, timed as none).
        this.ledger.record(wanted.hosts, wanted.nets, this.appliedAt, 0);
        return this.done(repairs, this.fields(), { added: size, updated: 0, removed: 0 }, 'full', size, how);
      }
      if (doubt !== undefined && this.ledger.empty && options.held) return { ...(await this.applyVerified(wanted, this.wantedParts(options.held), repairs, fresh)), ...how };
      const recorded = doubt === undefined ? this.ledger.current() : undefined;
      if (recorded) return { ...(await this.applyTrusted(wanted, recorded, repairs, fresh)), ...how };
      this.log.debug({ why: doubt }, 'nft: reading the agent’s sets back before this apply');
      return { ...(await this.applyRead(wanted, repairs, fresh)), ...how };
    } catch (err) {
      // The kernel may hold part of what was sent: read it back next time.
      this.ledger.distrust(`an apply failed: ${(err as Error).message.slice(0, 200)}`);
      throw err;
    }
  }

  private fields() {
    return { what: 'nft table', fields: { table: this.layout.table, set: this.layout.set }, owned: [this.tableWhat] };
  }

  /**
   * The delta from the record (nothing read back): see NftLedger. Entries a verification marked are
   * put back where wanted and deleted where not. A set made anew by the reconciliation (`fresh`)
   * holds the wanted entries already.
   */
  private async applyTrusted(wanted: NftParts, recorded: NonNullable<ReturnType<NftLedger['current']>>, repairs: Repairs, fresh: Fresh): Promise<ApplyResult> {
    const h = fresh.hosts ? asWritten(wanted.hosts) : withSuspects(ledgerDiff(recorded.hosts, recorded.ageS, wanted.hosts), recorded.suspects.hosts, recorded.ageS, wanted.hosts);
    const n = fresh.nets ? asWritten(wanted.nets) : withSuspects(ledgerDiff(recorded.nets, recorded.ageS, wanted.nets), recorded.suspects.nets, recorded.ageS, wanted.nets);
    if (recorded.repairs.hosts > 0) repairs.note(`entries of nft set ${this.layout.set}`);
    if (recorded.repairs.nets > 0) repairs.note(`entries of nft set ${this.layout.nets}`);
    const held = recorded.nets.length + recorded.suspects.nets.length;
    return this.writeDelta(h, n, wanted.nets, recorded.hosts.length + recorded.nets.length, held, false, repairs, undefined);
  }

  /**
   * A new process putting back the last applied set (the start-up restore): the kernel is asked in
   * check mode whether it holds each entry it is believed to hold (`held`, verify.ts) instead of
   * listing its sets (at a million, a listing took nft 18 s and 645 MB); then the delta from that
   * to the wanted entries is written, with the slices it lacks. An entry the kernel holds that was
   * not applied (one another process added) is not seen here: the periodic full read finds it
   * (see NftLedger).
   */
  private async applyVerified(wanted: NftParts, held: NftParts, repairs: Repairs, fresh: Fresh): Promise<ApplyResult> {
    const none = new EntryColumns(1);
    const found = await verifyNft(this.runner, this.layout, fresh.hosts ? none : held.hosts, fresh.nets ? none : held.nets, 0, nftTimeoutMs(VERIFY_SLICE));
    this.ledger.record(held.hosts, held.nets, this.appliedAt, 0);
    this.ledger.suspect(found.hostsSuspect, found.netsSuspect);
    this.log.debug({ checked: found.checked, suspect: found.hostsSuspect.length + found.netsSuspect.length }, 'nft: the last applied set checked in the kernel, not read back');
    return this.applyTrusted(wanted, this.ledger.current()!, repairs, fresh);
  }

  /**
   * Read the sets back, then repair and update: the path when the record is in doubt. Whose table
   * it is was settled by the probe (an intact table's sets carry the agent's marker) or, when the
   * probe found anything wrong, by the reconciliation before this.
   */
  private async applyRead(wanted: NftParts, repairs: Repairs, fresh: Fresh): Promise<ApplyResult> {
    const size = wanted.hosts.length + wanted.nets.length;
    const readStart = this.now();
    const current = await this.readParts(Math.max(size, this.ledger.size), fresh);
    const readMs = this.now() - readStart;
    // The kernel's remaining times as of the apply's start, as the wanted ones are (read later: longer by then).
    const back = (this.appliedAt - this.now()) / 1000;
    const h = fresh.hosts ? asWritten(wanted.hosts) : ledgerDiff(current.hosts, back, wanted.hosts);
    const n = fresh.nets ? asWritten(wanted.nets) : ledgerDiff(current.nets, back, wanted.nets);
    return this.writeDelta(h, n, wanted.nets, current.hosts.length + current.nets.length, current.nets.length, current.nonCidr > 0, repairs, readMs);
  }

  /** Send the delta of both sets (see transactions()) and record the result; `nets`: the wanted networks (what a refill writes). */
  private async writeDelta(h: SetDiff, n: SetDiff, nets: EntryColumns, held: number, netsHeld: number, nonCidr: boolean, repairs: Repairs, readMs: number | undefined): Promise<ApplyResult> {
    const sum = { added: h.added + n.added, updated: h.updated + n.updated, removed: h.removed + n.removed };
    const size = h.next.length + n.next.length;
    const mode = chooseMode(sum, held, size, nonCidr);
    if (mode !== 'none') {
      // Ranges someone else put in the networks' set are not CIDRs a delta can name: only a refill removes them.
      const changes: SetChange[] = [
        { set: this.layout.set, add: h.add, del: h.del },
        netsChange(this.layout.nets, n.add, n.del, nets, netsHeld, nonCidr),
      ];
      const runs = await runTransactions(this.runner, transactions(this.layout, changes, netsHeld), written(changes), nftRunTimeoutMs);
      this.log.debug({ runs, ...sum }, 'nft: delta of the agent’s sets');
    }
    this.ledger.record(h.next, n.next, this.appliedAt, readMs);
    return this.done(repairs, this.fields(), sum, mode, size);
  }

  /** Both sets as the kernel holds them (an absent set reads as empty). */
  private async readParts(size: number, skip: Fresh = { hosts: false, nets: false }): Promise<{ hosts: EntryColumns; nets: EntryColumns; nonCidr: number }> {
    const hosts = skip.hosts ? undefined : await this.elements(this.layout.set, size);
    const nets = skip.nets ? undefined : await this.elements(this.layout.nets, size);
    return { hosts: hosts?.entries ?? new EntryColumns(1), nets: nets?.entries ?? new EntryColumns(1), nonCidr: (hosts?.nonCidr ?? 0) + (nets?.nonCidr ?? 0) };
  }

  /**
   * Whether the kernel holds `entries` (the last applied set, as of now), without listing the
   * addresses (see verify.ts). What the record of this process says is checked when it is
   * trusted (and what is missing is marked for the next apply to put back); else `entries`.
   */
  async verify(entries: () => FirewallEntries): Promise<EntryCheck> {
    const started = this.now();
    const trusted = this.ledger.trusted();
    const parts = trusted ?? { ...this.wantedParts(entries()), ageS: 0 };
    const found = await verifyNft(this.runner, this.layout, parts.hosts, parts.nets, parts.ageS, nftTimeoutMs(VERIFY_SLICE));
    if (trusted) this.ledger.suspect(found.hostsSuspect, found.netsSuspect);
    return { checked: found.checked, missing: found.hostsSuspect.length + found.netsSuspect.length, extra: 0, ms: this.now() - started };
  }

  /** Entries overlapping `query` without listing the set of addresses (see lookup.ts). */
  lookup(query: Cidr, hosts?: readonly number[]): Promise<Array<{ cidr: string; timeoutSeconds: number | undefined }>> {
    return lookupNft(this.runner, this.layout, (set) => this.elements(set), query, hosts);
  }

  /** Something may have changed the sets in a way only a read can tell: the next apply reads them. */
  distrust(why: string): void {
    this.ledger.distrust(why);
  }

  /** Both sets' elements, read whole: nft's slow path at a million (see probe.ts), for explicit requests only. */
  async list(): Promise<string[]> {
    if ((await cheapOwnership(this.runner, this.layout)).owner.kind === 'foreign') return [];
    const { hosts, nets } = await this.readParts(this.ledger.size);
    return sortCidrTexts([...hosts.texts(), ...nets.texts()]);
  }

  async listTimeouts(): Promise<ReadonlyMap<string, number | undefined>> {
    const { hosts, nets } = await this.readParts(this.ledger.size);
    const out = columnsToMap(hosts);
    for (const [k, v] of columnsToMap(nets)) out.set(k, v);
    return out;
  }

  protected async flushNow(): Promise<void> {
    // A shadow table left by a re-creation that did not finish is the agent's too (see shadow.ts).
    await this.reconciler.dropShadow();
    const { owner } = await cheapOwnership(this.runner, this.layout);
    if (owner.kind === 'absent') return;
    if (owner.kind === 'foreign') {
      this.log.warn({ table: this.layout.table }, `${this.tableWhat} is not the agent's (${owner.why}); left as it is`);
      return;
    }
    // `add` first so the `delete` cannot fail on a missing table; one transaction.
    await this.runner.run('nft', ['-f', '-'], { input: `add table inet ${this.layout.table}\ndelete table inet ${this.layout.table}\n` });
    this.ledger.forget('the table was removed');
    this.log.info({ table: this.layout.table }, 'removed the agent’s nft table');
  }

  /** From the drops set alone (see NFT_DROPS_DEF): never a listing of the rules, which fetches every element. */
  async readCounters(): Promise<DropCounters> {
    const json = await listNftJson(this.runner, ['list', 'set', 'inet', this.layout.table, this.layout.drops], READ_QUICK);
    return json === undefined ? { packets: 0, bytes: 0 } : parseNftDrops(json);
  }

  async readHits(): Promise<HitCounter[]> {
    const out: HitCounter[] = [];
    for (const side of sides(this.layout.direction)) {
      const json = await listNftJson(this.runner, ['list', 'set', 'inet', this.layout.table, hitsSetName(this.layout.set, side)], READ_QUICK);
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
    return ownedObjects(this.layout, () => cheapOwnership(this.runner, this.layout), async () => (await nftStructure(this.runner, this.layout))?.problems ?? []);
  }

  /** The objects checked without reading any element (probe.ts), worded as an apply's repairs (see FirewallPlugin.check). */
  async check(): Promise<WatchCheck> {
    const probe = await probeNft(this.runner, this.layout, this.span);
    return { missing: probe.missing };
  }
}

/** The address sets a reconciliation made anew (see Reconciled). */
type Fresh = { readonly hosts: boolean; readonly nets: boolean };
