import { errorMessage, type WcfError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ApplyResult, FirewallPlugin } from '../../firewall/index.js';
import type { Settings } from '../../config/server.js';
import type { ProtectedSet } from '../../policy/protect.js';
import { reapplyLast } from './reapply.js';
import type { StateStore } from '../state/store.js';

/**
 * Put back hooks, chain/table and set that someone removed (a firewall reload,
 * `iptables -F`, `nft flush ruleset`), from the last applied set, before and
 * independent of the pull: while the API is down the pull fails, and the host
 * would stay unprotected until it answers again. Only when `objects()` says
 * something is missing, so a healthy cycle writes nothing here. Never throws:
 * a failure is logged and the cycle goes on to its pull.
 */
export async function reassertMissing(
  plugin: FirewallPlugin,
  state: StateStore,
  settings: Settings,
  protectedSet: Promise<ProtectedSet>,
  logger: Logger,
  now: number,
): Promise<ApplyResult | undefined> {
  if (!settings.running || !state.hasApplied(plugin.name)) return undefined;
  try {
    const missing = (await plugin.objects()).filter((o) => o.state === 'absent').map((o) => o.what);
    if (missing.length === 0) return undefined;
    // Read only now: at a million entries the record is a million objects, needed only for a repair.
    // One repair, one warning: this one (the plugin does not log its own).
    const r = await reapplyLast({ plugin, state, logger, protectedSet: await protectedSet, now, capacity: settings.maximum_rules, why: 're-assert', callerLogsRepairs: true });
    if (!r) return undefined;
    const entries = r.kept;
    if (r.result?.repaired.length) state.noteHistory(plugin.name, 'repair', now, 'repaired', `put back before the pull: ${r.result.repaired.join(', ')}`);
    if (r.result && r.result.repaired.length === 0 && r.result.relaid) {
      // Laid out for other settings (a reload, an upgrade), not damaged: no repair to warn of.
      logger.info({ from: r.result.relaid, entries: entries.length }, 'the agent’s firewall objects were laid out for other settings; laid out again before the pull');
      return r.result;
    }
    logger.warn(
      { missing, repaired: r.result?.repaired, entries: entries.length },
      `firewall objects were missing; re-asserted the last applied set (${entries.length} entries) before the pull`,
    );
    return r.result;
  } catch (err) {
    logger.error({ code: (err as WcfError).code }, `could not re-assert the last applied set: ${errorMessage(err)}`);
    return undefined;
  }
}
