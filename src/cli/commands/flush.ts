import { withLock } from '../../agent/lock.js';
import { flushDns } from '../../agent/dns-step.js';
import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';

/** Remove every firewall object the agent owns, and nothing else. */
export async function flushCommand(opts: GlobalOptions & { dryRun?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  return withLock(config.state_dir, async () => {
    const plugin = await openPlugin(config, logger, Boolean(opts.dryRun));
    await plugin.flush();
    state.saveApplied({ ts: Math.floor(Date.now() / 1000), plugin: plugin.name, entries: [] });
    process.stderr.write(`flushed: removed the ${plugin.name} objects owned by wcf-agent\n`);
    const dns = await flushDns({ config, logger, dryRun: plugin.name === 'dry-run', now: Math.floor(Date.now() / 1000) });
    if (dns) process.stderr.write(`flushed: removed the names wcf-agent blocked at the resolver (${dns})\n`);
    return 0;
  });
}
