import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { withLock } from '../../agent/lock.js';
import type { AgentConfig } from '../../config/load.js';
import { createRunner, netnsPrefix } from '../../firewall/exec.js';
import type { FirewallPlugin } from '../../firewall/types.js';
import { ownedObjects } from '../doctor/firewall-checks.js';
import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';

/**
 * Whether any object the agent owns is there before the flush (read-only), so a second
 * `flush` can say nothing was there. `unknown` when it cannot be read: the flush runs anyway.
 */
async function anythingOwned(plugin: FirewallPlugin, config: AgentConfig): Promise<'yes' | 'no' | 'unknown'> {
  if (plugin.name === 'dry-run') {
    const out = config.dry_run_output ?? join(config.state_dir, `dry-run.${config.dry_run_format}`);
    return out === '-' ? 'unknown' : existsSync(out) ? 'yes' : 'no';
  }
  const names = { setName: config.set_name, chainName: config.chain_name, tableName: config.table_name };
  const parts = await ownedObjects(plugin.name, names, createRunner(netnsPrefix(config.netns)));
  if (parts.some(([, p]) => p === 'present')) return 'yes';
  return parts.every(([, p]) => p === 'absent') ? 'no' : 'unknown';
}

/** Remove every firewall object the agent owns, and nothing else. */
export async function flushCommand(opts: GlobalOptions & { dryRun?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  return withLock(config.state_dir, async () => {
    const plugin = await openPlugin(config, logger, Boolean(opts.dryRun));
    const before = await anythingOwned(plugin, config);
    // Even when nothing seems there: a flush is idempotent, and removes a stray hook too.
    await plugin.flush();
    state.saveApplied({ ts: Math.floor(Date.now() / 1000), plugin: plugin.name, entries: [] });
    process.stderr.write(
      before === 'no'
        ? `nothing to flush: no ${plugin.name} objects owned by wcf-agent were there\n`
        : `flushed: removed the ${plugin.name} objects owned by wcf-agent\n`,
    );
    return 0;
  });
}
