import type { AgentConfig } from '../../../config/load.js';
import type { DnsPlugin } from '../../../dns/index.js';
import type { Logger } from '../../../log.js';
import { DOMAIN_SKIPS, type DomainSelection, type DomainSkip } from '../../../policy/domains.js';
import type { Cause, HistoryReason } from '../../state/history/codes.js';
import { EventColumns } from '../../state/history/events.js';
import { History, MIB } from '../../state/history/journal.js';
import type { UrlCache } from '../../../feed/url-cache.js';

/** What the URL feed's selection tells of each name (the cycle's DnsPlan). */
interface NamesPlan {
  readonly cache: Pick<UrlCache, 'lookupHost'>;
  readonly selection: DomainSelection;
}

/**
 * The names at the resolver in the change history: what the agent's resolver files held
 * before a write and after it (the backends' own `list`, the truth of what is enforced), and
 * why, from the URL feed's selection.
 */

/** The history the names of this backend are recorded in; undefined for a dry run beside the configured resolver. */
export function namesHistory(config: AgentConfig, logger: Logger, plugin: string): History | undefined {
  if (plugin === 'dry-run' && config.dns_plugin !== 'dry-run') return undefined;
  return new History(config.state_dir, logger, Math.floor(config.history_max_mb * MIB));
}

/** The names the backend holds, or undefined when they cannot be read (the change then goes unrecorded, the write goes on). */
export async function listedNames(plugin: DnsPlugin): Promise<string[] | undefined> {
  try {
    return await plugin.list();
  } catch {
    return undefined;
  }
}

const LEFT: Record<DomainSkip, HistoryReason> = {
  allowlist: 'protected',
  reverse_zone: 'protected',
  special_use: 'protected',
  cluster_domain: 'protected',
  search_domain: 'protected',
  public_suffix: 'protected',
  shared_platform: 'protected',
  whitelist: 'whitelisted',
  threshold: 'below_threshold',
  cap: 'cut_by_maximum_domains',
};

/** Why `name` is not selected any more, with its best decayed score where that is the reason. */
function leftReason(plan: NamesPlan, name: string): { reason: HistoryReason; score: number | null } {
  const id = plan.cache.lookupHost(name);
  if (id === -1) return { reason: 'not_in_feed', score: null };
  const code = plan.selection.outcomes?.[id] ?? 0;
  // Selected but not at the resolver: the resolver holds someone else's zone there, or the names filter refused it.
  if (code === 0) return { reason: 'unknown', score: null };
  const skip = DOMAIN_SKIPS[code - 1]!;
  const best = plan.selection.bestScores?.[id];
  return { reason: LEFT[skip], score: (skip === 'threshold' || skip === 'cap') && best !== undefined && best >= 0 ? best : null };
}

/** The changes from `before` to `after`; `all`: every name that left, left for this (a flush, running off). */
export function namesEvents(before: readonly string[], after: readonly string[], o: { now: number; plan?: NamesPlan | undefined; all?: HistoryReason }): EventColumns {
  const events = new EventColumns('names');
  const had = new Set(before);
  const has = new Set(after);
  for (const name of had) {
    if (has.has(name)) continue;
    const left = o.all ? { reason: o.all, score: null } : o.plan ? leftReason(o.plan, name) : { reason: 'unknown' as const, score: null };
    events.push(name, { ts: o.now, change: 'removed', ...left });
  }
  if (![...has].some((n) => !had.has(n))) return events;
  const rank = new Map(o.plan?.selection.domains.map((d, i) => [d.name, i] as const) ?? []);
  for (const name of has) {
    if (had.has(name)) continue;
    const i = rank.get(name);
    const d = i === undefined ? undefined : o.plan!.selection.domains[i]!;
    events.push(name, { ts: o.now, change: 'added', reason: d?.reason ?? 'unknown', score: d?.score ?? null, rank: i === undefined ? null : i + 1, expires: d ? d.expiresAt : undefined });
  }
  return events;
}

/** One write of the resolver (`write`), recorded: the names listed before and after it. */
export async function recordNames<T>(
  history: History | undefined,
  plugin: DnsPlugin,
  o: { now: number; cause: Cause; plan?: NamesPlan | undefined; all?: HistoryReason },
  write: () => Promise<T>,
): Promise<T> {
  const before = history ? await listedNames(plugin) : undefined;
  const result = await write();
  const after = before ? await listedNames(plugin) : undefined;
  if (history && before && after) history.names(plugin.name, o.cause, o.now, namesEvents(before, after, o));
  return result;
}
