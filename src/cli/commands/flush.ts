import { withLock } from '../../agent/state/lock.js';
import { refuseWhileDaemonRuns } from '../../agent/state/daemon-presence.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import { flushDns } from '../../agent/cycle/url-feed-front.js';
import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';
import { printJson } from '../format.js';
import { requireKernelRights } from '../kernel-rights.js';

/**
 * Whether any object the agent owns is there before the flush (read-only), so a second
 * `flush` can say nothing was there. `unknown` when it cannot be read: the flush runs anyway.
 */
async function anythingOwned(plugin: FirewallPlugin): Promise<{ owned: 'yes' | 'no' | 'unknown'; foreign: string[] }> {
  const objects = await plugin.objects();
  // Objects under the agent's names that it did not create: the flush leaves them (and says so).
  const foreign = objects.filter((o) => o.state === 'foreign').map((o) => o.what);
  const mine = objects.filter((o) => o.state !== 'foreign');
  if (objects.length === 0) return { owned: 'unknown', foreign }; // renders to stdout: nothing to look at
  if (mine.some((o) => o.state === 'present')) return { owned: 'yes', foreign };
  return { owned: mine.every((o) => o.state === 'absent') ? 'no' : 'unknown', foreign };
}

/**
 * Remove every firewall object the agent owns, and nothing else. Refused (exit 4, nothing
 * changed) while a daemon serves the state dir: its watcher would put everything back
 * within seconds, and "flushed" would not be what the kernel holds.
 */
export async function flushCommand(opts: GlobalOptions & { dryRun?: boolean; json?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  await refuseWhileDaemonRuns(config.state_dir, 'a flush');
  requireKernelRights(config, 'flush', { dryRun: opts.dryRun });
  const state = openState(config, logger);
  return withLock(config.state_dir, async () => {
    const plugin = await openPlugin(config, logger, Boolean(opts.dryRun));
    const before = await anythingOwned(plugin);
    // Even when nothing seems there: a flush is idempotent, and removes a stray hook too.
    await plugin.flush();
    state.saveApplied({ ts: Math.floor(Date.now() / 1000), plugin: plugin.name, entries: [] }, { cause: 'flush', all: 'flushed' });
    state.update({ owned: undefined });
    for (const what of before.foreign) process.stderr.write(`left ${what}: it was not created by wcf-agent\n`);
    process.stderr.write(
      before.owned === 'no'
        ? `nothing to flush: no ${plugin.name} objects owned by wcf-agent were there\n`
        : `flushed: removed the ${plugin.name} objects owned by wcf-agent\n`,
    );
    const dns = await flushDns({ config, logger, dryRun: plugin.name === 'dry-run', now: Math.floor(Date.now() / 1000) });
    if (dns) process.stderr.write(`flushed: removed the names wcf-agent blocked at the resolver (${dns})\n`);
    if (opts.json) await printJson({ ok: true, plugin: plugin.name, removed: before.owned !== 'no', foreign: before.foreign, dns: dns ?? null });
    return 0;
  });
}
