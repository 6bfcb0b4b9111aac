import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { FirewallPlugin, PluginName } from '../../firewall/index.js';
import type { StateStore } from './store.js';

const KERNEL_BACKENDS: readonly PluginName[] = ['ipset', 'nftables', 'iptables'];

/**
 * When the backend changes (config edited, or `auto` now finds another tool),
 * the old backend's objects would stay in the kernel forever. The state dir
 * knows which backends last applied something: flush those, once.
 */
export async function flushPreviousBackends(
  current: FirewallPlugin,
  state: StateStore,
  logger: Logger,
  open: (name: PluginName) => Promise<FirewallPlugin>,
): Promise<void> {
  if (current.name === 'dry-run') return;
  for (const name of KERNEL_BACKENDS) {
    if (name === current.name) continue;
    const last = state.loadApplied(name);
    if (!last || last.entries.length === 0) continue;
    try {
      const old = await open(name);
      await old.flush();
      state.saveApplied({ ts: Math.floor(Date.now() / 1000), plugin: name, entries: [] }, { cause: 'flush', all: 'backend_changed' });
      logger.warn({ previous: name, current: current.name }, `backend changed from ${name} to ${current.name}: removed the ${name} objects`);
    } catch (err) {
      logger.error({ previous: name }, `backend changed, but the old ${name} objects could not be removed: ${errorMessage(err)}`);
    }
  }
}
