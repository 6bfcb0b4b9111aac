import { hitsSetName, sides, type Side } from '../../direction.js';
import { LOG_LIMIT_PER_MINUTE, LOG_PREFIX } from '../../log-prefix.js';
import { markOwner } from '../../ownership.js';
import { parseNftJson, type NftItem } from '../json.js';
import { HOSTS_FLAGS, NETS_FLAGS, NFT_REFUSE_CHAIN, hookSides, inboundScope, sideField, type NftHook, type NftLayout } from '../text.js';

type Json = NftItem;

/**
 * One statement of a rule as `nft -j` lists it, reduced to what the agent
 * writes (counter values, a limit's burst and handles left out), so a rule
 * read back compares with the one expected as a plain list of strings.
 */
function statementKey(e: Json): string {
  const m = e.match as { left?: { payload?: { field?: unknown }; meta?: { key?: unknown }; concat?: unknown }; right?: unknown; op?: unknown } | undefined;
  if (m) {
    const field = (x: { payload?: { field?: unknown }; meta?: { key?: unknown } } | undefined) => String(x?.payload?.field ?? x?.meta?.key);
    const fib = (m.left as { fib?: { result?: unknown; flags?: unknown } } | undefined)?.fib;
    if (fib) return `match ${String(m.op)} fib(${String(fib.flags)},${String(fib.result)}) ${JSON.stringify(m.right)}`;
    const left = Array.isArray(m.left?.concat) ? `concat(${(m.left.concat as Array<Parameters<typeof field>[0]>).map(field).join(',')})` : field(m.left);
    return `match ${String(m.op)} ${left} ${JSON.stringify(m.right)}`;
  }
  const set = e.set as { op?: unknown; elem?: { payload?: { field?: unknown }; meta?: { key?: unknown } }; set?: unknown } | undefined;
  if (set) return `set ${String(set.op)} ${String(set.elem?.payload?.field ?? set.elem?.meta?.key)} ${String(set.set)}`;
  const limit = e.limit as { rate?: unknown; per?: unknown } | undefined;
  if (limit) return `limit ${String(limit.rate)}/${String(limit.per)}`;
  const log = e.log as { prefix?: unknown } | undefined;
  if (log) return `log ${String(log.prefix)}`;
  if ('counter' in e) return 'counter';
  if ('drop' in e) return 'drop';
  const jump = e.jump as { target?: unknown } | undefined;
  if (jump) return `jump ${String(jump.target)}`;
  const reject = e.reject as { type?: unknown; expr?: unknown } | undefined;
  if (reject) return `reject ${String(reject.type)} ${String(reject.expr ?? '')}`;
  return JSON.stringify(e);
}

function ruleKey(rule: Json): string {
  return ((rule.expr ?? []) as Json[]).map(statementKey).join('; ');
}

/** The keys of one side's rules on `hook` as nftSideRules writes them. */
function expectedSideKeys(l: NftLayout, side: Side, hook: NftHook): string[] {
  const f = sideField(side);
  const keys: string[] = [];
  const scope = inboundScope(l, hook, side);
  const scopeKey = scope === undefined ? '' : `; match ${scope.includes('!=') ? '!=' : '=='} fib(daddr,type) "local"`;
  for (const set of [l.set, l.nets]) {
    const key = set === l.nets ? `concat(${f},nfproto)` : f;
    const match = (side === 'in' ? `match == ${key} "@${set}"; match != iif "lo"` : `match == ${key} "@${set}"`) + scopeKey;
    if (l.logBlocked) keys.push(`${match}; limit ${LOG_LIMIT_PER_MINUTE}/minute; log ${LOG_PREFIX}`);
    const verdict = l.action === 'REJECT' ? `jump ${NFT_REFUSE_CHAIN}` : 'drop';
    const drops = `set update nfproto @${l.drops}`;
    keys.push(`${match}; set update ${f} @${hitsSetName(l.set, side)}; ${drops}; counter; ${verdict}`, `${match}; ${drops}; counter; ${verdict}`);
  }
  return keys;
}

/** The keys of the refuse chain's rules. */
const REFUSE_KEYS = ['match == l4proto "tcp"; reject tcp reset ', 'reject icmpx admin-prohibited'];

export interface NftStructure {
  /** What differs from the table the agent writes; empty = intact. */
  readonly problems: string[];
  /** The set exists (its elements can be read for the counts, even when the rest is broken). */
  readonly setReadable: boolean;
  /** The table or its set carries the agent's ownership comment. */
  readonly marked: boolean;
  /** Another agent instance's marker is on it (its id). */
  readonly otherAgent?: string;
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
  let netsSeen = false;
  let marked = false;
  let otherAgent: string | undefined;
  const mark = (comment: unknown) => {
    const owner = markOwner(comment, l.instance);
    if (owner.kind === 'own') marked = true;
    else if (owner.kind === 'other') otherAgent ??= owner.instance;
  };
  let dropsSeen = false;
  const hitsSets = new Set(sides(l.direction).map((side) => hitsSetName(l.set, side)));
  const hitsSeen = new Set<string>();
  const chainsSeen = new Set<string>();
  const rules = new Map<string, Json[]>();
  for (const item of items) {
    if ('set' in item || 'map' in item) {
      const s = (item.set ?? item.map) as Json;
      if ('set' in item && hitsSets.has(String(s.name))) {
        hitsSeen.add(String(s.name));
        const stmt = JSON.stringify(s.stmt ?? []);
        if (s.type !== 'ipv4_addr' || !(Array.isArray(s.flags) && s.flags.includes('timeout')) || !stmt.includes('counter')) {
          problems.push(`nft set ${String(s.name)} is not a counting set of addresses`);
        }
        continue;
      }
      if ('set' in item && s.name === l.drops) {
        dropsSeen = true;
        if (s.type !== 'nf_proto' || !JSON.stringify(s.stmt ?? []).includes('counter')) problems.push(`nft set ${l.drops} is not the agent's drop counter`);
        continue;
      }
      if ((s.name !== l.set && s.name !== l.nets) || !('set' in item)) {
        problems.push(`unexpected set ${String(s.name)} in nft table ${l.table}`);
        continue;
      }
      const name = String(s.name);
      if (name === l.set) setSeen = true;
      else netsSeen = true;
      mark(s.comment);
      const flags = Array.isArray(s.flags) ? [...(s.flags as string[])].sort().join(',') : '';
      const want = name === l.set ? HOSTS_FLAGS : NETS_FLAGS;
      const type = Array.isArray(s.type) ? s.type.join(' . ') : String(s.type);
      const wantType = name === l.set ? 'ipv4_addr' : 'ipv4_addr . nf_proto';
      if (type !== wantType || flags !== want) problems.push(`nft set ${name} has type ${type} flags ${flags || '-'}`);
    } else if ('chain' in item) {
      const c = item.chain as Json;
      const name = String(c.name);
      if (name === NFT_REFUSE_CHAIN && l.action === 'REJECT') {
        chainsSeen.add(name);
        if (c.hook !== undefined) problems.push(`nft chain ${name} is a base chain`);
        continue;
      }
      if (!(l.hooks as readonly string[]).includes(name)) {
        problems.push(`unexpected chain ${name} in nft table ${l.table}`);
        continue;
      }
      chainsSeen.add(name);
      if (c.type !== 'filter' || c.hook !== name || c.prio !== l.priority || c.policy !== 'accept') {
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
      mark((item.table as Json).comment);
    } else if (!('metainfo' in item)) {
      problems.push(`unexpected ${Object.keys(item).join(',')} in nft table ${l.table}`);
    }
  }
  if (!setSeen) problems.push(`nft set ${l.set}`);
  if (!netsSeen) problems.push(`nft set ${l.nets}`);
  if (!dropsSeen) problems.push(`nft set ${l.drops}`);
  const setReadable = setSeen;
  for (const name of hitsSets) if (!hitsSeen.has(name)) problems.push(`nft set ${name}`);
  const chainRules: Array<[string, string[]]> = l.hooks.map((hook) => [hook, hookSides(l, hook).flatMap((side) => expectedSideKeys(l, side, hook))]);
  if (l.action === 'REJECT') chainRules.push([NFT_REFUSE_CHAIN, REFUSE_KEYS]);
  for (const [chain, want] of chainRules) {
    if (!chainsSeen.has(chain)) {
      problems.push(`nft chain ${chain}`);
      continue;
    }
    const list = (rules.get(chain) ?? []).map(ruleKey);
    if (list.length !== want.length || list.some((k, i) => k !== want[i])) {
      problems.push(list.length === 0 ? `rule in nft chain ${chain}` : `rules of nft chain ${chain} (differed from expected)`);
    }
  }
  return { problems, setReadable, marked: marked && otherAgent === undefined, ...(otherAgent ? { otherAgent } : {}) };
}

