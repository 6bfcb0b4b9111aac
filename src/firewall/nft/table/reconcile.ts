import type { Logger } from 'pino';
import { NotOwnedError } from '../../../errors.js';
import type { CommandRunner } from '../../../exec/runner.js';
import { rewriteScript } from './build.js';
import { listChains } from './chains.js';
import { cheapOwnership } from './owner.js';
import { checkBatch, checkChains, type NftProbe } from './probe.js';
import { shadowLayout } from './shadow.js';
import type { NftLayout, NftParts } from '../text.js';
import { describeLayout } from './variants.js';
import { creation, fill, runTransactions, type NftRun } from '../write.js';

/**
 * Puts the agent's table in the shape its layout wants, before the entries are brought up to
 * date, never letting through an address blocked before and after (see build.ts):
 *
 * - no table: created whole, its chains hooked last;
 * - a set that holds entries defined otherwise (an earlier version's): the shadow table
 *   (shadow.ts) is built complete and hooked, the table deleted and built again, the shadow removed;
 * - an address set missing: made again and filled with the wanted entries, then
 * - the chains rewritten in one transaction when anything about them is not as laid out, and the
 *   objects another process added to the table removed.
 */

/** How many handles below the agent's first chain are looked at for objects another process left in its table. */
const SWEEP_HANDLES = 256;

/** Objects the sweep deletes by handle: those the probe asks for too (see probe.ts). */
const SWEPT_KINDS = ['set', 'flowtable', 'counter', 'quota', 'limit', 'secmark', 'synproxy'] as const;

export interface Reconciled {
  /** The address sets made anew by this reconciliation: they hold exactly the wanted entries. */
  readonly fresh: { readonly hosts: boolean; readonly nets: boolean };
  /** What was missing or altered (for the repairs). */
  readonly repaired: readonly string[];
  /** The chains were laid out by this agent with other settings (described): re-laid, not repaired. */
  readonly relaidFrom?: string;
  /** The table was built anew although it was there (why; see shadow.ts). */
  readonly rebuilt?: string;
}

type Run = (runs: Iterable<NftRun>, elements: number) => Promise<unknown>;

export class NftReconciler {
  private readonly run: Run;

  constructor(
    private readonly runner: CommandRunner,
    private readonly l: NftLayout,
    private readonly variants: readonly NftLayout[],
    private readonly log: Logger,
    timeoutMs: (run: NftRun) => number,
  ) {
    this.run = (runs, elements) => runTransactions(runner, runs, elements, timeoutMs);
  }

  /** Whether the probe found anything to reconcile (see above). */
  static needed(p: NftProbe): boolean {
    return !p.table || p.missing.length > 0 || p.shadow;
  }

  async reconcile(p: NftProbe, wanted: NftParts): Promise<Reconciled> {
    const size = wanted.hosts.length + wanted.nets.length;
    if (!p.table) {
      await this.run(creation(this.l, wanted), size);
      if (p.shadow) await this.dropShadow();
      return { fresh: { hosts: true, nets: true }, repaired: p.missing };
    }
    if (p.sets.get(this.l.set) === 'other' || p.sets.get(this.l.nets) === 'other') {
      await this.viaShadow(p, wanted);
      const why = p.missing.filter((m) => m.endsWith('has another definition')).join(', ');
      return { fresh: { hosts: true, nets: true }, repaired: p.missing, rebuilt: `built again beside a shadow copy: ${why}` };
    }
    const fresh = { hosts: p.sets.get(this.l.set) === 'absent', nets: p.sets.get(this.l.nets) === 'absent' };
    if (fresh.nets) await this.run(fill(this.l, this.l.nets, wanted.nets), wanted.nets.length);
    if (fresh.hosts) await this.run(fill(this.l, this.l.set, wanted.hosts), wanted.hosts.length);
    const relaid = this.relaidFrom(p);
    if (p.rewrite || [...p.sets.values()].some((s) => s !== 'ok')) {
      await this.run([{ script: rewriteScript(this.l, p), elements: 0, slowMs: 0 }], 0);
      await this.sweep();
    }
    if (p.shadow) await this.dropShadow();
    if (relaid) {
      this.log.info({ table: this.l.table, from: relaid, to: describeLayout(this.l) }, 'laid out the agent’s nft chains again for the new settings, in one transaction (the sets and their entries kept)');
      return { fresh, repaired: [], relaidFrom: relaid };
    }
    return { fresh, repaired: p.missing };
  }

  /** The layout of another setting that the table's chains match exactly, if any (see variants.ts). */
  private relaidFrom(p: NftProbe): string | undefined {
    if (!p.rewrite || p.sets.get(this.l.set) !== 'ok' || p.sets.get(this.l.nets) !== 'ok') return undefined;
    const names = new Set(p.chains.map((c) => c.name));
    const match = this.variants.find((v) => {
      const found = checkChains(v, p.chains, p.rules);
      return found.missing.length === 0 && !found.intruders && names.size === p.chains.length;
    });
    return match ? describeLayout(match) : undefined;
  }

  /**
   * Objects another process added to the table below the agent's first chain (added before the
   * rewrite, so numbered before its chains): each deleted by its handle once nothing refers to it.
   * The agent's own sets are all in use by its rules and stay.
   */
  private async sweep(): Promise<void> {
    const t = `inet ${this.l.table}`;
    const chains = (await listChains(this.runner)).get(t) ?? [];
    if (chains.length === 0) return;
    const first = Math.min(...chains.map((c) => c.handle));
    const lines: string[] = [];
    for (let h = Math.max(1, first - SWEEP_HANDLES); h < first; h++) for (const kind of SWEPT_KINDS) lines.push(`delete ${kind} ${t} handle ${h}`);
    if (lines.length === 0) return;
    const said = await checkBatch(this.runner, lines);
    const gone = lines.filter((_, i) => !said.has(i + 1));
    if (gone.length === 0) return;
    this.log.info({ table: this.l.table, objects: gone.length }, 'removed objects another process had added to the agent’s nft table');
    await this.runner.run('nft', ['-f', '-'], { input: gone.join('\n') + '\n' });
  }

  /** Build the shadow, delete and build the table, remove the shadow (see shadow.ts). */
  private async viaShadow(p: NftProbe, wanted: NftParts): Promise<void> {
    const size = wanted.hosts.length + wanted.nets.length;
    const s = shadowLayout(this.l);
    if (p.shadow && !(await this.dropShadow())) throw new NotOwnedError(`nft table inet ${s.table}`, 'the agent builds its shadow table under this name, and this one is not the agent’s: remove or rename it');
    this.log.info({ table: this.l.table, shadow: s.table }, `the agent’s nft table holds a set defined otherwise (${p.missing.join(', ')}): building it again beside a complete copy, inet ${s.table}, that blocks meanwhile`);
    await this.run(creation(s, wanted), size);
    await this.runner.run('nft', ['-f', '-'], { input: `delete table inet ${this.l.table}\n` });
    await this.run(creation(this.l, wanted), size);
    await this.dropShadow();
  }

  /** The shadow table removed, when it is the agent's (a table of another's under that name stays, with a warning). */
  async dropShadow(): Promise<boolean> {
    const s = shadowLayout(this.l);
    const { owner } = await cheapOwnership(this.runner, s);
    if (owner.kind === 'absent') return true;
    if (owner.kind === 'foreign') {
      this.log.warn({ table: s.table }, `nft table inet ${s.table} is not the agent's (${owner.why}); left as it is`);
      return false;
    }
    await this.runner.run('nft', ['-f', '-'], { input: `add table inet ${s.table}\ndelete table inet ${s.table}\n` });
    return true;
  }
}
