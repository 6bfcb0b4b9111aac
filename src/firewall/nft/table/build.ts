import { EntryColumns } from '../../entry-columns.js';
import { ENTRY_LINE_MAX, TextBuilder } from '../../../util/text-builder.js';
import { chainSpec, wantedChains } from './chains.js';
import type { NftProbe } from './probe.js';
import { setDefLine, setDefs } from './sets.js';
import { splitByShape, writeTableSets, type NftLayout, type NftParts } from '../text.js';

/**
 * The scripts that build the agent's table, and rebuild its chains in place, so that no address
 * blocked before and after is ever let through (make before break):
 *
 * - a new table is created sets first, their elements in as many runs as they need, and its
 *   chains and rules last, in one run of their own. The kernel makes a new table's rules live
 *   before the elements of its interval sets (kernel 6.18: re-creating a table with a
 *   concatenated interval set 30 times while a peer sent one datagram a millisecond, 21 of 30
 *   re-creations let 4-9 datagrams from listed networks through): with the elements committed
 *   in earlier transactions, the rules find them all the moment they are hooked;
 * - chains that are missing, altered, laid out by another version or setting, or joined by
 *   another process's objects are rebuilt in one transaction (see rewriteScript) that keeps the
 *   sets and their elements: the old rules drop until the new ones do, in the same commit.
 */

/** The whole table as one nft block (no newline after the last line): what the dry run writes. */
export function writeNftTable(t: TextBuilder, l: NftLayout, entries: EntryColumns | NftParts): void {
  const { hosts, nets } = entries instanceof EntryColumns ? splitByShape(entries) : entries;
  writeTableSets(t, l, hosts, nets);
  for (const c of wantedChains(l)) {
    t.str(`\tchain ${c.name} {\n`);
    if (c.hook) t.str(`\t\ttype filter hook ${c.hook} priority ${l.priority}; policy accept;\n`);
    for (const r of c.rules) t.str(`\t\t${r}\n`);
    t.str('\t}\n');
  }
  t.str('}');
}

/** What writeNftTable writes, as text. */
export function renderNftTable(l: NftLayout, entries: EntryColumns | NftParts): string {
  const t = new TextBuilder(8192);
  writeNftTable(t, l, entries);
  return t.toString();
}

/** The first run of a new table: the table and all its sets, the two address sets holding `first`. */
export function tableSetsScript(l: NftLayout, first: NftParts): Buffer {
  const t = new TextBuilder((first.hosts.length + first.nets.length) * ENTRY_LINE_MAX + 4096);
  writeTableSets(t, l, first.hosts, first.nets);
  t.str('}\n');
  return t.toBuffer();
}

/**
 * The chains and their rules as commands, after `prelude`: every chain first, then every rule in
 * the order of the chains, so the kernel numbers the rules as one run of handles (see probe.ts).
 */
export function chainsScript(l: NftLayout, prelude: readonly string[] = []): Buffer {
  const t = `inet ${l.table}`;
  const chains = wantedChains(l);
  const lines = [...prelude, ...chains.map((c) => `add chain ${t} ${c.name}${chainSpec(l, c)}`)];
  for (const c of chains) for (const r of c.rules) lines.push(`add rule ${t} ${c.name} ${r}`);
  return Buffer.from(lines.join('\n') + '\n');
}

/**
 * One transaction that rebuilds the chains of a table whose two address sets are there as the
 * agent defines them: every rule of the table flushed, every chain deleted (by handle: another
 * process's chain may have any name), the counting sets that are missing or defined otherwise
 * made again, then the chains and rules. The address sets and their elements are not touched.
 */
export function rewriteScript(l: NftLayout, probe: NftProbe): Buffer {
  const t = `inet ${l.table}`;
  const prelude = [`flush table ${t}`, ...probe.chains.map((c) => `delete chain ${t} handle ${c.handle}`)];
  for (const def of setDefs(l)) {
    if (def.entries) continue;
    const state = probe.sets.get(def.name);
    if (state === 'other') prelude.push(`delete set ${t} ${def.name}`);
    if (state !== 'ok') prelude.push(`add set ${t} ${def.name} ${setDefLine(l, def)}`);
  }
  return chainsScript(l, prelude);
}
