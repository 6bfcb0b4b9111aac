import type { FirewallPlugin } from '../../firewall/index.js';
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { mergeHits, type HitTotal } from '../state/hit-totals.js';
import type { StateStore } from '../state/store.js';

/**
 * The daemon's read of the kernel's hit counters, once per cycle, started
 * with the cycle's other reads so it overlaps the API calls and is done
 * before the apply (which may re-create counters). It folds the read into
 * the running totals in state_dir, so `hits` never goes back, and logs one
 * warning for each address a local process (or a forwarded host) tried to
 * reach since the last cycle. A failed read is logged and changes nothing.
 */
export async function recordHits(plugin: FirewallPlugin, state: StateStore, logger: Logger): Promise<HitTotal[] | undefined> {
  let kernel;
  try {
    kernel = await plugin.readHits();
  } catch (err) {
    logger.debug({ err: errorMessage(err) }, 'could not read the firewall hit counters; totals unchanged');
    return undefined;
  }
  const saved = state.loadHitTotals();
  const { totals, next } = mergeHits(saved, kernel);
  for (const t of totals) {
    if (t.side !== 'out') continue;
    const before = saved[`out ${t.ip}`];
    const previous = before ? before.basePackets + before.lastPackets : 0;
    if (t.packets > previous) {
      logger.warn(
        { ip: t.ip, packets: t.packets - previous },
        'a local process tried to reach a blocked address (this host may be infected); see wcf-agent hits --direction out',
      );
    }
  }
  if (JSON.stringify(next) !== JSON.stringify(saved)) state.saveHitTotals(next);
  return totals;
}
