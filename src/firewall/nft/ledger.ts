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
 * - a full read is due (fullReadEveryMs after the last), as a backstop for
 *   anything missed, and the one way entries another process *added* to the
 *   agent's sets are noticed (the verification of verify.ts sees what is
 *   missing, not what is extra).
 *
 * A transaction by another process is not a doubt by itself: the watcher then
 * verifies the elements (verify.ts) and, when some are missing, marks exactly
 * those (suspect()) for the next apply to put back, with no read.
 *
 * One record per kernel table (runner scope + table name), kept for the life
 * of the process: a configuration reload builds a new plugin for the same
 * table, and it must not pay a full read for it.
 */

/**
 * How often the record is checked by a full read when nothing gave reason to doubt it:
 * often enough that an entry another process added to the agent's set does not stay for
 * long where reading is cheap, rarely where it is not. The read may cost one core at most
 * READ_SHARE of the time (1,000 times its own duration apart), and is never more often
 * than hourly nor less often than daily. Measured reads of the set of addresses: 0.1 s at
 * 10,000 (hourly), 1 s at 100,000 (hourly), 60-100 s and 645 MB at a million (daily).
 */
export const FULL_CHECK_MIN_MS = 3600_000;
export const FULL_CHECK_MAX_MS = 24 * 3600_000;
const READ_SHARE = 1000;

export class NftLedger {
  private hosts: EntryColumns | undefined;
  private nets: EntryColumns | undefined;
  /** When the timeouts above were the kernel's (ms). */
  private atMs = 0;
  private readAtMs = 0;
  private readMs = 0;
  private doubt: string | undefined = 'nothing recorded yet';
  /** Addresses and networks a verification found missing (by slice): put back by the next apply. */
  private missingHosts: EntryColumns | undefined;
  private missingNets: EntryColumns | undefined;
  /** The rules carry the handles expectedHandles predicts (false after an unexpected probe result). */
  handlesKnown = true;

  constructor(private readonly now: () => number = Date.now) {}

  /**
   * Milliseconds between full reads, from what the last one cost (see FULL_CHECK_MIN_MS); before
   * any read was timed (the table was created whole), from the size at 0.08 ms an element (a
   * million read in 60-100 s).
   */
  fullReadEveryMs(): number {
    const cost = this.readMs > 0 ? this.readMs : this.size * 0.08;
    return Math.min(FULL_CHECK_MAX_MS, Math.max(FULL_CHECK_MIN_MS, READ_SHARE * cost));
  }

  /** Nothing has been recorded in this process yet (a start-up). */
  get empty(): boolean {
    return this.hosts === undefined;
  }

  /** Why the record cannot be trusted now (undefined = trusted). */
  whyDoubt(): string | undefined {
    if (this.doubt) return this.doubt;
    if (this.now() - this.readAtMs >= this.fullReadEveryMs()) return 'the periodic full read is due';
    return undefined;
  }

  /** Something may have changed the sets in a way only a read can tell: the next apply reads them. */
  distrust(why: string): void {
    this.doubt ??= why;
  }

  /** A verification found these addresses and networks (a superset of the missing ones) not as recorded. */
  suspect(hosts: EntryColumns, nets: EntryColumns): void {
    this.missingHosts = merged(this.missingHosts, hosts);
    this.missingNets = merged(this.missingNets, nets);
  }

  /**
   * The sets as they stand after a successful write (timeouts as of `atMs`). `readMs`: they
   * were also read whole, in that long (the next full read is timed from it).
   */
  record(hosts: EntryColumns, nets: EntryColumns, atMs: number, readMs?: number): void {
    this.hosts = hosts;
    this.nets = nets;
    this.atMs = atMs;
    if (readMs !== undefined) {
      this.readAtMs = atMs;
      this.readMs = readMs;
    }
    this.doubt = undefined;
    this.missingHosts = undefined;
    this.missingNets = undefined;
  }

  forget(why: string): void {
    this.hosts = undefined;
    this.nets = undefined;
    this.doubt = why;
    this.missingHosts = undefined;
    this.missingNets = undefined;
  }

  /**
   * The recorded sets and how many seconds their timeouts have run down since; undefined when
   * not recorded. What a verification marked (slices the kernel may lack) is left out, so the
   * delta adds what of it is wanted again, and given as `suspects`, so the delta deletes what of
   * it is no longer wanted (a guarded delete: nothing fails when the kernel lacks it). `repairs`:
   * how many addresses and networks were marked.
   */
  current(): { hosts: EntryColumns; nets: EntryColumns; suspects: { hosts: EntryColumns; nets: EntryColumns }; ageS: number; repairs: { hosts: number; nets: number } } | undefined {
    if (!this.hosts || !this.nets) return undefined;
    const hosts = this.missingHosts ? without(this.hosts, this.missingHosts) : this.hosts;
    const nets = this.missingNets ? without(this.nets, this.missingNets) : this.nets;
    const suspects = { hosts: this.missingHosts ?? new EntryColumns(1), nets: this.missingNets ?? new EntryColumns(1) };
    return { hosts, nets, suspects, ageS: (this.now() - this.atMs) / 1000, repairs: { hosts: this.hosts.length - hosts.length, nets: this.nets.length - nets.length } };
  }

  /** The recorded sets as they are (no verification's marks), for a verification; undefined when not trusted. */
  trusted(): { hosts: EntryColumns; nets: EntryColumns; ageS: number } | undefined {
    if (this.doubt || !this.hosts || !this.nets) return undefined;
    return { hosts: this.hosts, nets: this.nets, ageS: (this.now() - this.atMs) / 1000 };
  }

  /** Entries recorded (for a check that the kernel still holds about that many). */
  get size(): number {
    return (this.hosts?.length ?? 0) + (this.nets?.length ?? 0);
  }
}

/** `more` added to `to` (undefined: none yet). */
function merged(to: EntryColumns | undefined, more: EntryColumns): EntryColumns | undefined {
  if (more.length === 0) return to;
  if (!to) return more;
  const out = new EntryColumns(to.length + more.length);
  for (const c of [to, more]) for (let i = 0; i < c.length; i++) out.push(c.starts[i]!, c.prefixes[i]!, c.timeoutAt(i));
  return out;
}

/** `c` without the CIDRs in `drop`. */
export function without(c: EntryColumns, drop: EntryColumns): EntryColumns {
  const index = new CidrIndex(drop.length);
  for (let i = 0; i < drop.length; i++) index.add(drop.starts[i]!, drop.prefixes[i]!, i);
  const out = c.filter((i) => index.get(c.starts[i]!, c.prefixes[i]!) === -1);
  index.release();
  return out;
}

const ledgers = new Map<string, NftLedger>();

/** The record of the table `key` names (runner scope + table); `now`: its clock (tests move it). */
export function ledgerFor(key: string, now?: () => number): NftLedger {
  let l = ledgers.get(key);
  if (!l) ledgers.set(key, (l = new NftLedger(now)));
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

/** One set's delta and the record after it (see ledgerDiff). */
export type SetDiff = ReturnType<typeof ledgerDiff>;

/** The delta of a set that was just written whole with `c`: nothing more to send. */
export function asWritten(c: EntryColumns): SetDiff {
  const none = new EntryColumns(1);
  return { add: none, del: none, added: c.length, updated: 0, removed: 0, next: c };
}

/**
 * `diff` (from the record without the entries a verification marked) with the marked entries that
 * are no longer wanted deleted too: left out of the record, they would otherwise stay in the kernel
 * until their timeout (the next apply computed its delta without them). The delete is guarded
 * (see nftDeltaScript), so an entry the kernel no longer holds costs nothing.
 */
export function withSuspects(diff: SetDiff, suspects: EntryColumns, ageS: number, wanted: EntryColumns): SetDiff {
  if (suspects.length === 0) return diff;
  const keep = new CidrIndex(wanted.length);
  for (let i = 0; i < wanted.length; i++) keep.add(wanted.starts[i]!, wanted.prefixes[i]!, i);
  const gone = suspects.filter((i) => keep.get(suspects.starts[i]!, suspects.prefixes[i]!) === -1 && !(suspects.timeouts[i]! - ageS < 1));
  keep.release();
  if (gone.length === 0) return diff;
  const del = new EntryColumns(diff.del.length + gone.length);
  for (const c of [diff.del, gone]) for (let i = 0; i < c.length; i++) del.push(c.starts[i]!, c.prefixes[i]!, undefined);
  return { ...diff, del, removed: diff.removed + gone.length };
}
