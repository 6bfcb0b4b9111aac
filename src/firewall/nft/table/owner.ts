import { hitsSetName, sides } from '../../direction.js';
import { isV01NftTable } from '../../legacy-shapes.js';
import { markOwner, otherAgentWhy, type Ownership } from '../../ownership.js';
import type { CommandRunner } from '../../../exec/runner.js';
import { parseNftJson } from '../json.js';
import { probeNft, type NftProbe } from './probe.js';
import { listNftJson, READ_QUICK } from '../read.js';
import { checkNftStructure, type NftStructure } from './structure.js';
import type { NftLayout } from '../text.js';

/**
 * Whose table `inet <table_name>` is, and whether it is intact. The cheap way
 * (the probe, and the marker on a hits set, which is small) settles the common
 * cases; the full structure read (`nft -t list table`, which nft 1.0.x answers
 * only after fetching every element of every set: two minutes and 645 MB at a
 * million) is left for what the cheap way cannot tell: a table without a readable
 * marker, which may be an earlier version's or someone else's.
 */

/** The table's structure read whole, or undefined when it does not exist. Slow at a million elements (see above). */
export async function nftStructure(runner: CommandRunner, l: NftLayout): Promise<(NftStructure & { v01?: boolean }) | undefined> {
  const json = await listNftJson(runner, ['-t', 'list', 'table', 'inet', l.table]);
  if (json === undefined) return undefined;
  const structure = checkNftStructure(json, l);
  if (structure.marked) return structure;
  // The set (which carries the marker in JSON) may be what someone deleted; nft 1.0.6
  // prints the table's own comment only in the text listing, so look there before
  // calling the table unmarked.
  const text = structure.otherAgent ? undefined : await runner.run('nft', ['-t', 'list', 'table', 'inet', l.table], { readOnly: true }).catch(() => undefined);
  const comment = text?.stdout.split('\n').slice(0, 3).map((line) => /^comment "(.*)"$/.exec(line.trim())?.[1]).find((c) => c !== undefined);
  const owner = markOwner(comment, l.instance);
  if (owner.kind === 'other') return { ...structure, otherAgent: owner.instance };
  const marked = owner.kind === 'own';
  // 0.1 hooked input and forward, or input alone (no output, no hit counters, no marker).
  const v01 = !marked && [['input', 'forward'], ['input']].some((hooks) => isV01NftTable(json, l.table, l.set, hooks));
  return { ...structure, marked, v01 };
}

/** Ownership from a structure read (see ownership.ts). */
export function structureOwnership(structure: (NftStructure & { v01?: boolean }) | undefined, table = 'wcf_agent'): Ownership {
  if (structure === undefined) return { kind: 'absent' };
  if (structure.otherAgent) return { kind: 'foreign', why: otherAgentWhy(structure.otherAgent, `nft delete table inet ${table}`) };
  if (structure.marked) return { kind: 'own' };
  if (structure.v01) return { kind: 'legacy' };
  return { kind: 'foreign', why: `no "wcf-agent" comment, and it differs from the table the agent makes: ${structure.problems.join('; ')}` };
}

/**
 * The table's ownership without reading the address sets: the probe says whether it exists
 * and what is missing, a hits set carries the marker. Anything less clear is settled by the
 * structure read (then `probe` is undefined and `structure` says what is wrong).
 */
export async function cheapOwnership(runner: CommandRunner, l: NftLayout, probed?: NftProbe): Promise<{ owner: Ownership; probe?: NftProbe; structure?: NftStructure }> {
  const probe = probed ?? (await probeNft(runner, l));
  if (!probe.table) return { owner: { kind: 'absent' }, probe };
  const hits = hitsSetName(l.set, sides(l.direction)[0]!);
  const json = await listNftJson(runner, ['list', 'set', 'inet', l.table, hits], READ_QUICK).catch(() => undefined);
  const comment = json === undefined ? undefined : parseNftJson(json).map((i) => (i.set as { comment?: unknown } | undefined)?.comment).find((c) => c !== undefined);
  const owner = markOwner(comment, l.instance);
  if (owner.kind === 'own') return { owner: { kind: 'own' }, probe };
  // Another agent's: refused on its marker alone (its table is exactly the agent's shape, so nothing else would tell).
  if (owner.kind === 'other') return { owner: { kind: 'foreign', why: otherAgentWhy(owner.instance, `nft delete table inet ${l.table}`) }, probe };
  const structure = await nftStructure(runner, l);
  return { owner: structureOwnership(structure, l.table), ...(structure ? { structure } : {}) };
}
