import { hitsSetName, sides } from '../../direction.js';
import type { Ownership } from '../../ownership.js';
import type { OwnedObject } from '../../plugin.js';
import type { NftProbe } from './probe.js';
import { NFT_REFUSE_CHAIN, type NftLayout } from '../text.js';

/**
 * The table, then each part of it the agent writes (the two sets, the hits set of each side in
 * use, the refuse chain with REJECT, each hook's base chain), each present, absent, unreadable
 * or foreign: from the quick probe where it answered for the agent's own table, else from the
 * full structure read (`problems`).
 */
export async function ownedObjects(
  l: NftLayout,
  cheapOwnership: () => Promise<{ owner: Ownership; probe?: NftProbe }>,
  problemsRead: () => Promise<string[]>,
): Promise<OwnedObject[]> {
  const t = l.table;
  const what = `nft table inet ${t}`;
  const parts: Array<[string, string]> = [
    [`nft set ${l.set}`, `nft set inet ${t} ${l.set}`],
    [`nft set ${l.nets}`, `nft set inet ${t} ${l.nets}`],
    [`nft set ${l.drops}`, `nft set inet ${t} ${l.drops}`],
    ...sides(l.direction).map((side): [string, string] => {
      const name = hitsSetName(l.set, side);
      return [`nft set ${name}`, `nft set inet ${t} ${name}`];
    }),
    ...(l.action === 'REJECT' ? [[`nft chain ${NFT_REFUSE_CHAIN}`, `nft chain inet ${t} ${NFT_REFUSE_CHAIN}`] as [string, string]] : []),
    ...l.hooks.map((h): [string, string] => [`nft chain ${h}`, `nft chain inet ${t} ${h}`]),
  ];
  const all = (state: OwnedObject['state'], error?: string): OwnedObject[] => parts.map(([, w]) => ({ what: w, state, ...(error ? { error } : {}) }));
  let found: { owner: Ownership; probe?: NftProbe };
  try {
    found = await cheapOwnership();
  } catch (err) {
    return [{ what, state: 'unreadable', error: (err as Error).message }, ...all('unreadable', (err as Error).message)];
  }
  const { owner, probe } = found;
  if (owner.kind === 'absent') return [{ what, state: 'absent' }, ...all('absent')];
  if (owner.kind === 'foreign') return [{ what, state: 'foreign', error: owner.why }, ...all('foreign', 'in a table that is not the agent\'s')];
  const problems = probe ? probe.missing : await problemsRead();
  const missing = new Set(problems);
  const known = new Set(parts.map(([p]) => p));
  return [
    { what, state: 'present' },
    ...parts.map(([p, w]): OwnedObject => ({ what: w, state: missing.has(p) ? 'absent' : 'present' })),
    ...problems.filter((p) => !known.has(p)).map((p): OwnedObject => ({ what: p, state: 'absent' })),
  ];
}
