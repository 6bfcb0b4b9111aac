import { withLock } from '../../agent/lock.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import { flushDns } from '../../agent/dns-step.js';
import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';

/**
 * Whether any object the agent owns is there before the flush (read-only), so a second
 * `flush` can say nothing was there. `unknown` when it cannot be read: the flush runs anyway.
 */
async function anythingOwned(plugin: FirewallPlugin): Promise<'yes' | 'no' | 'unknown'> {
  const objects = await plugin.objects();
  if (objects.length === 0) return 'unknown'; // renders to stdout: nothing to look at
  if (objects.some((o) => o.state === 'present')) return 'yes';
  return objects.every((o) => o.state === 'absent') ? 'no' : 'unknown';
}

/** Remove every firewall object the agent owns, and nothing else. */
export async function flushCommand(opts: GlobalOptions & { dryRun?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  return withLock(config.state_dir, async () => {
    const plugin = await openPlugin(config, logger, Boolean(opts.dryRun));
    const before = await anythingOwned(plugin);
    // Even when nothing seems there: a flush is idempotent, and removes a stray hook too.
    await plugin.flush();
    state.saveApplied({ ts: Math.floor(Date.now() / 1000), plugin: plugin.name, entries: [] });
    process.stderr.write(
      before === 'no'
        ? `nothing to flush: no ${plugin.name} objects owned by wcf-agent were there\n`
        : `flushed: removed the ${plugin.name} objects owned by wcf-agent\n`,
    );
    const dns = await flushDns({ config, logger, dryRun: plugin.name === 'dry-run', now: Math.floor(Date.now() / 1000) });
    if (dns) process.stderr.write(`flushed: removed the names wcf-agent blocked at the resolver (${dns})\n`);
    return 0;
  });
}
