import { FirewallError } from '../../errors.js';
import { hitsSetName, sides } from '../direction.js';
import type { CommandRunner } from '../../exec/runner.js';
import { HOSTS_FLAGS, NETS_FLAGS, NETS_TYPEOF, NFT_DROPS_DEF, NFT_REFUSE_CHAIN, nftChainRules, type NftLayout } from './text.js';

/**
 * A look at the agent's table that reads no set element. nft 1.0.x fetches
 * every element of every set for any listing (`list tables`, `-t list table`,
 * `list chain`, `get element`): at a million elements that took nft one to
 * two minutes and 650 MB, so it cannot be the watcher's check every few
 * seconds. Instead the kernel itself is asked, in nft's check mode (`nft -c`:
 * the batch is evaluated by the kernel and then aborted, nothing changes),
 * whether each object is there:
 *
 * - `create table` / `create set` fail with "File exists" when the object is there;
 * - `delete rule ... handle H` fails with "No such file or directory" when that rule is gone.
 *
 * The rule handles are known without reading them: the kernel numbers a new
 * table's chains, then its sets, then its rules, 1, 2, 3... in the order of
 * the batch that created them, and the agent always creates its table in one
 * batch (see expectedHandles; checked against a listing by the tests). The
 * kernel goes on numbering from there for anything added to the table later
 * (the agent adds only elements, which take no handle), so a rule, chain or set
 * another process added (an `accept` inserted before the agent's drop) holds
 * one of the next handles: those are asked for too (`delete ... handle H`
 * answering nothing means it is there).
 */

/** Handles past the agent's own that are asked for (objects someone else added to the table). */
const EXTRA_HANDLES = 3;

export interface NftProbe {
  /** The table exists. */
  readonly table: boolean;
  /** What is missing, worded as the full structure check words it. */
  readonly missing: string[];
}

/** The agent's chains in the order its table block creates them. */
export function chainOrder(l: NftLayout): string[] {
  return [...(l.action === 'REJECT' ? [NFT_REFUSE_CHAIN] : []), ...l.hooks];
}

/** The agent's sets in the order its table block creates them, with their definitions. */
export function setOrder(l: NftLayout): Array<[string, string]> {
  return [
    [l.set, `{ type ipv4_addr; flags ${HOSTS_FLAGS}; }`],
    [l.nets, `{ typeof ${NETS_TYPEOF}; flags ${NETS_FLAGS}; }`],
    [l.drops, NFT_DROPS_DEF],
    ...sides(l.direction).map((s): [string, string] => [hitsSetName(l.set, s), '{ type ipv4_addr; flags dynamic,timeout; }']),
  ];
}

/** Each rule of the agent's table with the handle the kernel gives it when the table is created in one batch. */
export function expectedHandles(l: NftLayout): Array<{ chain: string; handle: number }> {
  const chains = chainOrder(l);
  let next = chains.length + setOrder(l).length + 1;
  const out: Array<{ chain: string; handle: number }> = [];
  for (const chain of chains) {
    const count = chain === NFT_REFUSE_CHAIN ? 2 : nftChainRules(l, chain as (typeof l.hooks)[number]).length;
    for (let i = 0; i < count; i++) out.push({ chain, handle: next++ });
  }
  return out;
}

/** One nft error report: the batch line it is about and what it says. */
interface Complaint {
  readonly line: number;
  readonly text: string;
}

function complaints(stderr: string): Complaint[] {
  const out: Complaint[] = [];
  for (const m of stderr.matchAll(/^[^\n:]*:(\d+):[\d-]+: Error: ([^\n]*)$/gm)) out.push({ line: Number(m[1]), text: m[2]! });
  return out;
}

/**
 * Whether the batch reached the kernel. nft evaluates the whole batch first and sends none of it
 * when any command fails there; so one complaint in the kernel's words ("Could not process rule:")
 * means every complaint is the kernel's. Not each complaint on its own: when the kernel answers
 * "No such file or directory", nft 1.0.6 looks for a similar name anywhere on the host and, if it
 * finds one (a chain `input` in another table), words the kernel's answer as "No such file or
 * directory; did you mean chain ‘input’ in table inet ‘filter’?", without that prefix. Read as
 * nft's own evaluation, that made every probe beside such a table fail.
 */
function reachedKernel(said: readonly Complaint[]): boolean {
  return said.some((c) => c.text.startsWith('Could not process rule:'));
}

/** nft's complaints about a batch run in check mode ('' when it has none). */
async function checkBatch(runner: CommandRunner, commands: readonly string[]): Promise<string> {
  try {
    await runner.run('nft', ['-c', '-f', '-'], { input: commands.join('\n') + '\n' });
    return '';
  } catch (err) {
    if (!(err instanceof FirewallError) || err.stderr === undefined) throw err;
    return err.stderr;
  }
}

/**
 * Probe the table (see above). `rules`: also check each rule by its expected
 * handle (off when the handles are not known to be the kernel's).
 */
export async function probeNft(runner: CommandRunner, l: NftLayout, rules = true): Promise<NftProbe> {
  const t = `inet ${l.table}`;
  const lines: Array<{ cmd: string; what: string; present: 'exists' | 'deletable' | 'extra' }> = [];
  // Rules first, then their chains (a chain deleted earlier in the batch would hide its rules).
  for (const [name, def] of setOrder(l)) lines.push({ cmd: `create set ${t} ${name} ${def}`, what: `nft set ${name}`, present: 'exists' });
  if (rules) {
    const handles = expectedHandles(l);
    for (const { chain, handle } of handles) {
      lines.push({ cmd: `delete rule ${t} ${chain} handle ${handle}`, what: `rule in nft chain ${chain}`, present: 'deletable' });
    }
    const last = handles.at(-1)?.handle ?? chainOrder(l).length + setOrder(l).length;
    for (let h = last + 1; h <= last + EXTRA_HANDLES; h++) {
      const what = `objects another process added to nft table ${t}`;
      for (const chain of chainOrder(l)) lines.push({ cmd: `delete rule ${t} ${chain} handle ${h}`, what, present: 'extra' });
      lines.push({ cmd: `delete set ${t} handle ${h}`, what, present: 'extra' }, { cmd: `delete chain ${t} handle ${h}`, what, present: 'extra' });
    }
  }
  for (const chain of chainOrder(l)) lines.push({ cmd: `delete chain ${t} ${chain}`, what: `nft chain ${chain}`, present: 'deletable' });
  lines.push({ cmd: `create table ${t}`, what: `nft table ${t}`, present: 'exists' });
  const stderr = await checkBatch(runner, lines.map((x) => x.cmd));
  const said = complaints(stderr);
  if (stderr.trim() !== '' && said.length === 0) throw new FirewallError(`nft check of table ${t} failed: ${stderr.slice(0, 300)}`, { stderr });
  const byLine = new Map(said.map((c) => [c.line, c]));
  const tableLine = byLine.get(lines.length);
  // nft's own evaluation stops the batch before the kernel sees it (a chain or set it does not
  // know): then only what it named is known to be missing, and the table is there.
  const evaluatedOnly = said.length > 0 && !reachedKernel(said);
  if (evaluatedOnly && !complaints(await checkBatch(runner, [`create table ${t}`])).some((c) => /File exists/.test(c.text))) {
    return { table: false, missing: [`nft table ${t}`] };
  }
  if (!evaluatedOnly && !tableLine) return { table: false, missing: [`nft table ${t}`] };
  const missing: string[] = [];
  const seen = new Set<string>();
  lines.forEach((x, i) => {
    if (i === lines.length - 1) return;
    const c = byLine.get(i + 1);
    // An extra object is "wrong" when its delete would succeed (no complaint), which only the kernel can say.
    const gone =
      x.present === 'extra'
        ? !evaluatedOnly && c === undefined
        : evaluatedOnly
          ? c !== undefined && /No such file or directory/.test(c.text)
          : x.present === 'exists'
            ? !c || !/File exists/.test(c.text)
            : c !== undefined && /No such file or directory/.test(c.text);
    if (gone && !seen.has(x.what)) {
      seen.add(x.what);
      missing.push(x.what);
    }
  });
  if (evaluatedOnly && missing.length === 0) throw new FirewallError(`nft check of table ${t} failed: ${stderr.slice(0, 300)}`, { stderr });
  // A chain that is gone is named once, not with each of its rules.
  return { table: true, missing: missing.filter((m) => !(m.startsWith('rule in ') && seen.has(m.slice('rule in '.length)))) };
}
