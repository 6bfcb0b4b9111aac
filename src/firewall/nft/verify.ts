import { FirewallError } from '../../errors.js';
import { ENTRY_LINE_MAX, TextBuilder } from '../../util/text-builder.js';
import { EntryColumns } from '../entry-columns.js';
import { EXPIRY_SLACK_S } from '../entries.js';
import type { CommandRunner } from '../../exec/runner.js';
import { keyTail, type NftLayout } from './text.js';
import { sliceColumns } from './write.js';

/**
 * Whether the kernel still holds what the agent applied, asked without listing
 * its sets (nft 1.0.x fetches every element for any listing: a minute and
 * 645 MB at a million). The kernel is asked in check mode to delete the
 * applied elements, a slice at a time (`nft -c -f -`: evaluated by the kernel,
 * then aborted, nothing changes). A slice the kernel accepts is held whole; one
 * it refuses ("No such file or directory": some element is not there) holds
 * less than applied. nft names the failing element reliably only for slices of
 * a few hundred, so the slice as a whole is what the repair puts back (adding
 * an element that is there changes nothing). Both sets are asked this way (the
 * networks' set is a concatenated one, which spares nft the read of every
 * interval set before an element command: see NftParts). Measured with nft
 * 1.0.6 beside 150,000 networks: a 20,000-element slice 0.17 s and 12 MB.
 *
 * What this cannot see: an element another process added. A full read does
 * (ledger.ts).
 *
 * Entries about to expire (within EXPIRY_SLACK_S) are not looked for: the kernel may
 * have let them go already.
 */

/** Elements per check-mode run. */
export const VERIFY_SLICE = 20_000;
/** Check-mode runs at a time (one per core of a small host). */
const PARALLEL = 2;

/** What one verification found. */
export interface NftVerification {
  /** Entries looked for. */
  readonly checked: number;
  /** Addresses in slices the kernel refused (each slice lacks at least one): what a repair puts back. */
  readonly hostsSuspect: EntryColumns;
  /** The same for networks. */
  readonly netsSuspect: EntryColumns;
}

/**
 * `delete element inet T S { a, b, ... }` for check mode, of the entries of `slice` with more than
 * EXPIRY_SLACK_S left `ageS` seconds after their timeouts were taken (written from the slice in
 * place: no copy of a million entries); undefined when none is.
 */
function deleteCheckScript(l: NftLayout, set: string, slice: EntryColumns, ageS: number): { script: Buffer; count: number } | undefined {
  const tail = keyTail(l, set);
  const t = new TextBuilder(slice.length * (ENTRY_LINE_MAX + 8) + 256);
  t.str(`delete element inet ${l.table} ${set} {\n`);
  let count = 0;
  for (let i = 0; i < slice.length; i++) {
    const left = slice.timeouts[i]!;
    if (!Number.isNaN(left) && left - ageS <= EXPIRY_SLACK_S) continue;
    if (count++ > 0) t.str(',\n');
    t.cidr(slice.starts[i]!, slice.prefixes[i]!).str(tail);
  }
  t.str('\n}\n');
  return count === 0 ? undefined : { script: t.toBuffer(), count };
}

/** Why the kernel refuses a check-mode delete when an element is not there (or the set is gone, which the probe reports). */
const ABSENT = /No such file or directory|No buffer space available/;

/** Whether the kernel holds every element of `script` (one check-mode run). */
async function sliceHeld(runner: CommandRunner, script: Buffer, timeoutMs: number): Promise<boolean> {
  try {
    await runner.run('nft', ['-c', '-f', '-'], { input: script, timeoutMs });
    return true;
  } catch (err) {
    if (err instanceof FirewallError && ABSENT.test(err.stderr ?? '')) return false;
    throw err;
  }
}

/**
 * Every slice of both sets, PARALLEL at a time: the elements of the slices the kernel refused, per
 * set, and how many entries were looked for.
 */
async function checkSlices(runner: CommandRunner, l: NftLayout, sets: Array<[string, EntryColumns]>, ageS: number, timeoutMs: number): Promise<{ refused: Map<string, EntryColumns>; checked: number }> {
  const jobs: Array<[string, EntryColumns]> = [];
  for (const [set, c] of sets) for (let i = 0; i < c.length; i += VERIFY_SLICE) jobs.push([set, sliceColumns(c, i, Math.min(c.length, i + VERIFY_SLICE))]);
  const refused: Array<[string, EntryColumns]> = [];
  let next = 0;
  let checked = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const [set, slice] = jobs[next++]!;
      const check = deleteCheckScript(l, set, slice, ageS);
      if (!check) continue;
      checked += check.count;
      if (!(await sliceHeld(runner, check.script, timeoutMs))) refused.push([set, slice]);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  const out = new Map<string, EntryColumns>();
  for (const [set] of sets) {
    const mine = refused.filter(([s]) => s === set).map(([, c]) => c);
    const all = new EntryColumns(mine.reduce((n, c) => n + c.length, 0));
    for (const c of mine) for (let i = 0; i < c.length; i++) all.push(c.starts[i]!, c.prefixes[i]!, c.timeoutAt(i));
    out.set(set, all);
  }
  return { refused: out, checked };
}

/**
 * Check the kernel against what was applied: `hosts` and `nets` as recorded, their timeouts
 * `ageS` seconds old. `timeoutMs`: each nft run's limit.
 */
export async function verifyNft(runner: CommandRunner, l: NftLayout, hosts: EntryColumns, nets: EntryColumns, ageS: number, timeoutMs: number): Promise<NftVerification> {
  const { refused, checked } = await checkSlices(runner, l, [[l.set, hosts], [l.nets, nets]], ageS, timeoutMs);
  return { checked, hostsSuspect: refused.get(l.set)!, netsSuspect: refused.get(l.nets)! };
}
