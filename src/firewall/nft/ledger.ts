import { CidrIndex } from '../../net/cidr-index.js';
import { differs, type EntryDiff } from '../diff.js';
import { EntryColumns } from '../entry-columns.js';

/**
 * What this process last wrote into the agent's two nft sets, trusted in
 * place of reading them back while nothing else has touched them.
 *
 * Reading a million-element set back through nft costs minutes and over a
 * gigabyte (see probe.ts), so an apply computes its delta from this record
 * instead, and reads the kernel only when there is reason to doubt it:
 *
 * - nothing recorded yet in this process (start-up, or a reload with other names);
 * - an apply that failed or was cut short (the kernel may hold part of it);
 * - the watcher heard a transaction by another process that may have touched
 *   the table (see distrust(), called through FirewallPlugin.distrust);
 * - the event source was down for a while (changes may have gone unheard);
 * - FULL_CHECK_MS after the last read, as a backstop for anything missed.
 *
 * One record per kernel table (runner scope + table name), kept for the life
 * of the process: a configuration reload builds a new plugin for the same
 * table, and it must not pay a full read for it.
 */

/**
 * A full read at least this often even when nothing gave reason to doubt: a
 * change the event source missed (it is restarted with back-off when it dies,
 * and the gap is distrusted, but a host without any event source relies on this
 * alone for element changes). Once a day: at a million elements the read costs
 * nft a minute or two of one core, paid at a time with no other reason to.
 */
export const FULL_CHECK_MS = 24 * 3600_000;

export class NftLedger {
  private hosts: EntryColumns | undefined;
  private nets: EntryColumns | undefined;
  /** When the timeouts above were the kernel's (ms). */
  private atMs = 0;
  private readAtMs = 0;
  private doubt: string | undefined = 'nothing recorded yet';
  /** The rules carry the handles expectedHandles predicts (false after an unexpected probe result). */
  handlesKnown = true;

  /** Why the record cannot be trusted now (undefined = trusted). */
  whyDoubt(nowMs = Date.now()): string | undefined {
    if (this.doubt) return this.doubt;
    if (nowMs - this.readAtMs >= FULL_CHECK_MS) return 'daily full check';
    return undefined;
  }

  /** Something may have changed the sets behind the agent's back: the next apply reads them. */
  distrust(why: string): void {
    this.doubt ??= why;
  }

  /** The sets as they stand after a successful write (timeouts as of `atMs`). `read`: they were also read whole. */
  record(hosts: EntryColumns, nets: EntryColumns, atMs: number, read: boolean): void {
    this.hosts = hosts;
    this.nets = nets;
    this.atMs = atMs;
    if (read) this.readAtMs = atMs;
    this.doubt = undefined;
  }

  forget(why: string): void {
    this.hosts = undefined;
    this.nets = undefined;
    this.doubt = why;
  }

  /** The recorded sets and how many seconds their timeouts have run down since; undefined when not recorded. */
  current(): { hosts: EntryColumns; nets: EntryColumns; ageS: number } | undefined {
    if (!this.hosts || !this.nets) return undefined;
    return { hosts: this.hosts, nets: this.nets, ageS: (Date.now() - this.atMs) / 1000 };
  }

  /** Entries recorded (for a check that the kernel still holds about that many). */
  get size(): number {
    return (this.hosts?.length ?? 0) + (this.nets?.length ?? 0);
  }
}

const ledgers = new Map<string, NftLedger>();

/** The record of the table `key` names (runner scope + table). */
export function ledgerFor(key: string): NftLedger {
  let l = ledgers.get(key);
  if (!l) ledgers.set(key, (l = new NftLedger()));
  return l;
}

/**
 * The delta from the recorded entries (their timeouts run down by `ageS`) to
 * the wanted ones, and the record after it: unchanged entries keep the
 * kernel's timeout (not the wanted one, which may differ within the
 * tolerance), changed and new ones take the wanted one. Entries whose recorded
 * time has run out are gone from the kernel: not deleted, and re-added when
 * wanted. Typed columns and one hash index: no object per entry.
 */
export function ledgerDiff(current: EntryColumns, ageS: number, wanted: EntryColumns): EntryDiff & { next: EntryColumns } {
  const index = new CidrIndex(current.length);
  for (let i = 0; i < current.length; i++) index.add(current.starts[i]!, current.prefixes[i]!, i);
  const matched = new Uint8Array(current.length);
  const next = new EntryColumns(wanted.length);
  const change = new Uint8Array(wanted.length); // 1 = added, 2 = updated
  let added = 0;
  let updated = 0;
  for (let j = 0; j < wanted.length; j++) {
    const i = index.get(wanted.starts[j]!, wanted.prefixes[j]!);
    const want = wanted.timeouts[j]!;
    const left = i === -1 ? NaN : current.timeouts[i]! - ageS;
    if (i !== -1) matched[i] = 1;
    if (i === -1 || left < 1) {
      change[j] = 1;
      added++;
      next.push(wanted.starts[j]!, wanted.prefixes[j]!, wanted.timeoutAt(j));
    } else if (differs(left, want)) {
      change[j] = 2;
      updated++;
      next.push(wanted.starts[j]!, wanted.prefixes[j]!, wanted.timeoutAt(j));
    } else next.push(wanted.starts[j]!, wanted.prefixes[j]!, Number.isNaN(left) ? undefined : left);
  }
  index.release();
  let removed = 0;
  for (let i = 0; i < current.length; i++) if (matched[i] === 0 && !(current.timeouts[i]! - ageS < 1)) removed++;
  const del = new EntryColumns(removed);
  for (let i = 0; i < current.length; i++) if (matched[i] === 0 && !(current.timeouts[i]! - ageS < 1)) del.push(current.starts[i]!, current.prefixes[i]!, undefined);
  const add = new EntryColumns(added + updated);
  for (let j = 0; j < wanted.length; j++) if (change[j] !== 0) add.push(wanted.starts[j]!, wanted.prefixes[j]!, wanted.timeoutAt(j));
  return { add, del, added, updated, removed, next };
}
