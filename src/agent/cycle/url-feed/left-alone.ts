import type { LeftAlone } from '../../../dns/index.js';
import type { Logger } from '../../../log.js';
import type { DnsSmallState, DnsStateStore } from '../../state/url-feed-state.js';

/** Names kept with what holds them: enough for explain and the log, bounded whatever the resolver holds. */
export const LEFT_ALONE_KEPT = 1000;
const LOGGED = 10;

/**
 * Records the names the backend left alone (someone else's local data or zone at the
 * resolver holds them) in dns-state.json, for `status` and `explain`, and logs the list
 * once per change: a name that stays left alone cycle after cycle is one warning, not one
 * per cycle, and the warning comes back as soon as the list changes.
 */
export function recordLeftAlone(store: DnsStateStore, logger: Logger, plugin: string, list: readonly LeftAlone[]): void {
  const before = store.small.leftAlone;
  const names: Record<string, string> = {};
  for (const l of list.slice(0, LEFT_ALONE_KEPT)) names[l.name] = l.held;
  const now: DnsSmallState['leftAlone'] = list.length ? { plugin, count: list.length, names } : undefined;
  if (same(before, now)) return;
  store.update({ leftAlone: now });
  if (!now) {
    logger.info({ plugin }, 'no name is left alone at the resolver any more');
    return;
  }
  const shown = list.slice(0, LOGGED).map((l) => `${l.name} (${l.held})`);
  logger.warn(
    { plugin, count: list.length, names: list.slice(0, LOGGED).map((l) => l.name) },
    `${list.length} names are left alone: someone else's data at ${plugin} holds them, so the agent does not block them: ${shown.join('; ')}${list.length > LOGGED ? '; ...' : ''}`,
  );
}

function same(a: DnsSmallState['leftAlone'], b: DnsSmallState['leftAlone']): boolean {
  if (!a || !b) return a === b;
  if (a.plugin !== b.plugin || a.count !== b.count) return false;
  const ka = Object.keys(a.names);
  return ka.length === Object.keys(b.names).length && ka.every((k) => a.names[k] === b.names[k]);
}
