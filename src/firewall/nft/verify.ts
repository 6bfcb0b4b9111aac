import { FirewallError } from '../../errors.js';
import { CidrIndex } from '../../net/cidr-index.js';
import { ENTRY_LINE_MAX, TextBuilder } from '../../util/text-builder.js';
import { EntryColumns } from '../entry-columns.js';
import { lastingEntries } from '../entries.js';
import type { CommandRunner } from '../../exec/runner.js';
import { readNftSet } from './read.js';
import type { NftLayout } from './text.js';
import { sliceColumns } from './write.js';

/**
 * Whether the kernel still holds what the agent applied, asked without listing
 * the big set of addresses (nft 1.0.x fetches every element for any listing of
 * it: a minute and 645 MB at a million).
 *
 * - **Addresses** (the hash set): the kernel is asked in check mode to delete
 *   them, a slice at a time (`nft -c -f -`: evaluated by the kernel, then
 *   aborted, nothing changes). A slice the kernel accepts is held whole; one it
 *   refuses ("No such file or directory": some element is not there) holds
 *   less than applied. nft names the failing element reliably only for slices of
 *   a few hundred, so the slice as a whole is what the repair puts back (adding
 *   an element that is there changes nothing). Measured with nft 1.0.6: a
 *   100,000-element slice 0.3 s and 42 MB; a million in 20,000-element slices,
 *   two at a time, about 3 s of nft time.
 * - **Networks** (the interval set): check mode is no cheaper than a read here
 *   (nft reads every interval set back before evaluating a delete: 3.6 s for one
 *   element beside 150,000 networks), so the set is read whole (0.2 s and 24 MB
 *   at 15,000 networks, 6 s and 200 MB at 150,000) and compared both ways:
 *   missing networks and networks the agent did not write.
 *
 * Entries about to expire (within EXPIRY_SLACK_S) are not looked for: the kernel may
 * have let them go already.
 */

/** Addresses per check-mode run. */
export const VERIFY_SLICE = 20_000;
/** Check-mode runs at a time (one per core of a small host). */
const PARALLEL = 2;

/** What one verification found. */
export interface NftVerification {
  /** Entries looked for. */
  readonly checked: number;
  /** Addresses in slices the kernel refused (each slice lacks at least one): what a repair puts back. */
  readonly hostsSuspect: EntryColumns;
  /** Networks missing from the kernel's interval set. */
  readonly netsMissing: number;
  /** Networks in the kernel's interval set that the agent did not write. */
  readonly netsExtra: number;
}

/** `delete element inet T S { a, b, ... }` for check mode. */
function deleteCheckScript(l: NftLayout, hosts: EntryColumns): Buffer {
  const t = new TextBuilder(hosts.length * ENTRY_LINE_MAX + 256);
  t.str(`delete element inet ${l.table} ${l.set} {\n`);
  for (let i = 0; i < hosts.length; i++) {
    if (i > 0) t.str(',\n');
    t.cidr(hosts.starts[i]!, hosts.prefixes[i]!);
  }
  t.str('\n}\n');
  return t.toBuffer();
}

/** Why the kernel refuses a check-mode delete when an element is not there (or the set is gone, which the probe reports). */
const ABSENT = /No such file or directory|No buffer space available/;

/** Whether the kernel holds every address of `hosts` (one check-mode run). */
async function sliceHeld(runner: CommandRunner, l: NftLayout, hosts: EntryColumns, timeoutMs: number): Promise<boolean> {
  try {
    await runner.run('nft', ['-c', '-f', '-'], { input: deleteCheckScript(l, hosts), timeoutMs });
    return true;
  } catch (err) {
    if (err instanceof FirewallError && ABSENT.test(err.stderr ?? '')) return false;
    throw err;
  }
}

/** The addresses of every slice the kernel refused (see above). */
async function checkHosts(runner: CommandRunner, l: NftLayout, hosts: EntryColumns, timeoutMs: number): Promise<EntryColumns> {
  const refused: EntryColumns[] = [];
  let next = 0;
  const worker = async () => {
    while (next < hosts.length) {
      const from = next;
      next = Math.min(hosts.length, next + VERIFY_SLICE);
      const slice = sliceColumns(hosts, from, next);
      if (!(await sliceHeld(runner, l, slice, timeoutMs))) refused.push(slice);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  const out = new EntryColumns(refused.reduce((n, s) => n + s.length, 0));
  for (const s of refused) for (let i = 0; i < s.length; i++) out.push(s.starts[i]!, s.prefixes[i]!, s.timeoutAt(i));
  return out;
}

/** The networks `wanted` has and the kernel's set lacks, and the kernel's that `wanted` lacks. */
async function compareNets(runner: CommandRunner, l: NftLayout, wanted: EntryColumns, allWanted: EntryColumns, timeoutMs: number): Promise<{ missing: number; extra: number }> {
  const read = await readNftSet(runner, l.table, l.nets, { timeoutMs });
  const held = read?.entries ?? new EntryColumns(1);
  const index = new CidrIndex(held.length);
  for (let i = 0; i < held.length; i++) index.add(held.starts[i]!, held.prefixes[i]!, i);
  let missing = 0;
  for (let j = 0; j < wanted.length; j++) if (index.get(wanted.starts[j]!, wanted.prefixes[j]!) === -1) missing++;
  index.release();
  // Extra: what the kernel holds that was never written (entries about to expire included on the wanted side).
  const known = new CidrIndex(allWanted.length);
  for (let j = 0; j < allWanted.length; j++) known.add(allWanted.starts[j]!, allWanted.prefixes[j]!, j);
  let extra = (read?.nonCidr ?? 0);
  for (let i = 0; i < held.length; i++) if (known.get(held.starts[i]!, held.prefixes[i]!) === -1) extra++;
  known.release();
  return { missing, extra };
}

/**
 * Check the kernel against what was applied: `hosts` and `nets` as recorded, their timeouts
 * `ageS` seconds old. `timeoutMs`: each nft run's limit (scaled to the sets' sizes by the caller).
 */
export async function verifyNft(runner: CommandRunner, l: NftLayout, hosts: EntryColumns, nets: EntryColumns, ageS: number, timeoutMs: number): Promise<NftVerification> {
  const h = lastingEntries(hosts, ageS);
  const n = lastingEntries(nets, ageS);
  // Both at once: the networks' read and the addresses' checks are separate nft processes.
  const [hostsSuspect, netsFound] = await Promise.all([checkHosts(runner, l, h, timeoutMs), compareNets(runner, l, n, nets, timeoutMs)]);
  return { checked: h.length + n.length, hostsSuspect, netsMissing: netsFound.missing, netsExtra: netsFound.extra };
}

