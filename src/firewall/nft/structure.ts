import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from '../log-prefix.js';
import { OWNER_MARK } from '../ownership.js';
import { parseNftJson, type NftItem } from './json.js';
import { NFT_PRIORITY, type NftLayout } from './text.js';

type Json = NftItem;

function isSaddrMatch(expr: unknown, set: string): boolean {
  const m = (expr as { match?: { op?: unknown; left?: { payload?: { protocol?: unknown; field?: unknown } }; right?: unknown } }).match;
  return (
    !!m && m.op === '==' && m.left?.payload?.protocol === 'ip' && m.left.payload.field === 'saddr' && m.right === `@${set}`
  );
}

export interface NftStructure {
  /** What differs from the table the agent writes; empty = intact. */
  readonly problems: string[];
  /** The set exists (its elements can be read for the counts, even when the rest is broken). */
  readonly setReadable: boolean;
  /** The table or its set carries the agent's ownership comment. */
  readonly marked: boolean;
}

/**
 * Problems with the agent's table as listed by `nft -j -t list table` (terse:
 * no set elements), compared with what it should be. Empty = intact. Anything
 * extra in the table counts as a problem too: the table is the agent's alone.
 */
export function checkNftStructure(json: string, l: NftLayout): NftStructure {
  const items = parseNftJson(json);
  const problems: string[] = [];
  let setSeen = false;
  let marked = false;
  const chainsSeen = new Set<string>();
  const rules = new Map<string, Json[]>();
  for (const item of items) {
    if ('set' in item || 'map' in item) {
      const s = (item.set ?? item.map) as Json;
      if (s.name !== l.set || !('set' in item)) {
        problems.push(`unexpected set ${String(s.name)} in nft table ${l.table}`);
        continue;
      }
      setSeen = true;
      if (s.comment === OWNER_MARK) marked = true;
      const flags = Array.isArray(s.flags) ? [...(s.flags as string[])].sort().join(',') : '';
      if (s.type !== 'ipv4_addr' || flags !== 'interval,timeout') problems.push(`nft set ${l.set} has type ${String(s.type)} flags ${flags || '-'}`);
    } else if ('chain' in item) {
      const c = item.chain as Json;
      const name = String(c.name);
      if (!(l.hooks as readonly string[]).includes(name)) {
        problems.push(`unexpected chain ${name} in nft table ${l.table}`);
        continue;
      }
      chainsSeen.add(name);
      if (c.type !== 'filter' || c.hook !== name || c.prio !== NFT_PRIORITY || c.policy !== 'accept') {
        problems.push(`nft chain ${name} has type ${String(c.type)} hook ${String(c.hook)} priority ${String(c.prio)} policy ${String(c.policy)}`);
      }
    } else if ('rule' in item) {
      const r = item.rule as Json;
      const chain = String(r.chain);
      let list = rules.get(chain);
      if (!list) rules.set(chain, (list = []));
      list.push(r);
    } else if ('table' in item) {
      // Newer nft versions list the table's comment in JSON too.
      if ((item.table as Json).comment === OWNER_MARK) marked = true;
    } else if (!('metainfo' in item)) {
      problems.push(`unexpected ${Object.keys(item).join(',')} in nft table ${l.table}`);
    }
  }
  if (!setSeen) problems.push(`nft set ${l.set}`);
  const setReadable = setSeen;
  for (const hook of l.hooks) {
    if (!chainsSeen.has(hook)) {
      problems.push(`nft chain ${hook}`);
      continue;
    }
    const list = rules.get(hook) ?? [];
    const want = l.logBlocked ? 2 : 1;
    let ok = list.length === want;
    if (ok && l.logBlocked) {
      const e = (list[0]!.expr ?? []) as Json[];
      const limit = e.find((x) => 'limit' in x)?.limit as Json | undefined;
      const log = e.find((x) => 'log' in x)?.log as Json | undefined;
      ok = isSaddrMatch(e[0], l.set) && limit?.rate === LOG_LIMIT_PER_MINUTE && limit.per === 'minute' && log?.prefix === LOG_PREFIX;
    }
    if (ok) {
      const e = (list[list.length - 1]!.expr ?? []) as Json[];
      const verdict = l.action === 'REJECT' ? 'reject' : 'drop';
      ok = e.length === 3 && isSaddrMatch(e[0], l.set) && 'counter' in e[1]! && verdict in e[2]!;
    }
    if (!ok) problems.push(list.length === 0 ? `rule in nft chain ${hook}` : `rules of nft chain ${hook} (differed from expected)`);
  }
  return { problems, setReadable, marked };
}

