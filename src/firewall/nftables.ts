import type { Logger } from 'pino';
import { FirewallError } from '../errors.js';
import { chooseMode, diffEntries } from './diff.js';
import { Serial, createRunner, stderrMatches } from './exec.js';
import {
  LOG_LIMIT_PER_MINUTE,
  LOG_PREFIX,
  NFT_PRIORITY,
  nftHooks,
  normalizeEntries,
  parseNftSetJson,
  renderNftDelta,
  renderNftRecreate,
  renderNftRefill,
  resolveOverlaps,
  sortCidrTexts,
  type NftLayout,
  type NftSetParsed,
} from './render.js';
import type { ApplyResult, CommandRunner, FirewallEntry, FirewallPlugin, PluginOptions } from './types.js';

const NO_SUCH_OBJECT = /No such file or directory/i;

type Json = Record<string, unknown>;

function isSaddrMatch(expr: unknown, set: string): boolean {
  const m = (expr as { match?: { op?: unknown; left?: { payload?: { protocol?: unknown; field?: unknown } }; right?: unknown } }).match;
  return (
    !!m && m.op === '==' && m.left?.payload?.protocol === 'ip' && m.left.payload.field === 'saddr' && m.right === `@${set}`
  );
}

/**
 * Problems with the agent's table as listed by `nft -j -t list table` (terse:
 * no set elements), compared with what it should be. Empty = intact. Anything
 * extra in the table counts as a problem too: the table is the agent's alone.
 */
export function checkNftStructure(json: string, l: NftLayout): string[] {
  let items: Json[];
  try {
    items = (JSON.parse(json) as { nftables: Json[] }).nftables;
    if (!Array.isArray(items)) throw new Error('no "nftables" array');
  } catch (err) {
    throw new FirewallError(`cannot parse nft JSON output: ${String(err)}`, { cause: err });
  }
  const problems: string[] = [];
  let setSeen = false;
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
    } else if (!('table' in item) && !('metainfo' in item)) {
      problems.push(`unexpected ${Object.keys(item).join(',')} in nft table ${l.table}`);
    }
  }
  if (!setSeen) problems.push(`nft set ${l.set}`);
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
  return problems;
}

/**
 * nftables backend: the agent's own table `inet <table_name>` holding an
 * interval set with per-element timeouts and one base chain per hook
 * (input/forward/output) at priority -5. Every change is ONE `nft -f -` run,
 * which the kernel commits as one transaction:
 *
 * - intact table, large change: `flush set` + `add element` (atomic: packets
 *   see the old contents or the new, never an empty set; counters kept);
 * - table missing or altered: `add table; delete table; table { ... }` — the
 *   whole table re-created, with its elements, in the same transaction;
 * - small change: `delete element` + `add element`.
 *
 * Overlapping entries are resolved before rendering (see resolveOverlaps): the
 * set has no auto-merge, so it holds exactly the entries rendered.
 */
export class NftablesPlugin implements FirewallPlugin {
  readonly name = 'nftables' as const;
  private readonly runner: CommandRunner;
  private readonly log: Logger;
  private readonly layout: NftLayout;
  private appliedOnce = false;
  private readonly serial = new Serial();

  constructor(options: PluginOptions) {
    this.runner = options.runner ?? createRunner();
    this.log = options.logger;
    this.layout = {
      table: options.names.tableName,
      set: options.names.setName,
      hooks: nftHooks(options.hookChains),
      action: options.action,
      logBlocked: options.logBlocked,
    };
  }

  /** `undefined` when the table does not exist, else the list of problems. */
  private async structure(): Promise<string[] | undefined> {
    try {
      const { stdout } = await this.runner.run('nft', ['-j', '-t', 'list', 'table', 'inet', this.layout.table]);
      return checkNftStructure(stdout, this.layout);
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_OBJECT)) return undefined;
      throw err;
    }
  }

  /** Elements of the set, or undefined when the set (or table) does not exist. */
  private async elements(): Promise<NftSetParsed | undefined> {
    try {
      const { stdout } = await this.runner.run('nft', ['-j', 'list', 'set', 'inet', this.layout.table, this.layout.set]);
      return parseNftSetJson(stdout);
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_OBJECT)) return undefined;
      throw err;
    }
  }

  private async transaction(script: string): Promise<void> {
    await this.runner.run('nft', ['-f', '-'], { input: script });
  }

  apply(entries: readonly FirewallEntry[]): Promise<ApplyResult> {
    return this.serial.run(() => this.applyNow(entries));
  }

  private async applyNow(entries: readonly FirewallEntry[]): Promise<ApplyResult> {
    const wanted = resolveOverlaps(normalizeEntries(entries));
    const problems = await this.structure();
    const fresh = !this.appliedOnce && problems === undefined;
    const repaired: string[] = [];
    if (!fresh) {
      if (problems === undefined) repaired.push(`nft table inet ${this.layout.table}`);
      else repaired.push(...problems);
    }
    const intact = problems !== undefined && problems.length === 0;
    // A broken table may still hold a readable set: read it for the counts.
    const current = problems === undefined || problems.some((p) => p === `nft set ${this.layout.set}`) ? undefined : await this.elements();
    const currentEntries = current?.entries ?? new Map<string, number | undefined>();
    const diff = diffEntries(currentEntries, wanted);
    const forceFull = !intact || (current?.nonCidr ?? 0) > 0;
    const mode = chooseMode(diff, currentEntries.size, wanted.length, forceFull);

    if (!intact) await this.transaction(renderNftRecreate(this.layout, wanted));
    else if (mode === 'full') await this.transaction(renderNftRefill(this.layout, wanted));
    else if (mode === 'delta') await this.transaction(renderNftDelta(this.layout, diff.add, diff.del));

    this.appliedOnce = true;
    if (fresh) this.log.info({ table: this.layout.table, set: this.layout.set }, 'created nft table');
    if (repaired.length > 0) this.log.warn({ repaired }, 'firewall objects were missing or altered and have been re-created');
    if (mode !== 'none') {
      this.log.info({ mode, added: diff.added, removed: diff.removed, updated: diff.updated, size: wanted.length }, 'nft set updated');
    }
    return { added: diff.added, removed: diff.removed, updated: diff.updated, mode, repaired };
  }

  async list(): Promise<string[]> {
    const parsed = await this.elements();
    return parsed ? sortCidrTexts(parsed.entries.keys()) : [];
  }

  flush(): Promise<void> {
    return this.serial.run(() => this.flushNow());
  }

  private async flushNow(): Promise<void> {
    // `add` first so the `delete` cannot fail on a missing table; one transaction.
    await this.transaction(`add table inet ${this.layout.table}\ndelete table inet ${this.layout.table}\n`);
    this.log.info({ table: this.layout.table }, 'removed the agent’s nft table');
  }
}
