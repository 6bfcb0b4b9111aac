import { detectPlugin } from './detect.js';
import { DryRunPlugin } from './dry-run.js';
import { createRunner, netnsPrefix } from './exec.js';
import { IpsetPlugin } from './ipset/plugin.js';
import { NftablesPlugin } from './nft/plugin.js';
import type { FirewallPlugin, PluginName, PluginOptions } from './plugin.js';
import type { CommandRunner } from '../exec/runner.js';
import { IptablesPlugin } from './xtables/plugin.js';

/**
 * The firewall layer's only entry point for code outside src/firewall/: the
 * plugin interface, building a plugin, detection, and the command runner.
 */

export { PLUGIN_TOOLS, TOOLS, detectPlugin, probeTools, type Tool } from './detect.js';
export { createRunner, netnsPrefix, type RunnerOptions } from './exec.js';
export { checkConfiguredNames, validateOwnedNames } from './names.js';
export { DIRECTIONS, sides, type Direction, type Side } from './direction.js';
export { timeoutUntil } from './entries.js';
export { foreignSummary } from './ownership.js';
export { EntryColumns, type FirewallEntries } from './entry-columns.js';
export type * from './plugin.js';
export type { FirewallEntry } from './entry.js';

/** The backend for a configured (or detected) plugin name. Owned names come only from `options.names`. */
export function createPlugin(name: PluginName, options: PluginOptions): FirewallPlugin {
  const opts: PluginOptions = name === 'dry-run' || options.runner ? options : { ...options, runner: createRunner() };
  switch (name) {
    case 'ipset':
      return new IpsetPlugin(opts);
    case 'nftables':
      return new NftablesPlugin(opts);
    case 'iptables':
      return new IptablesPlugin(opts);
    case 'dry-run':
      return new DryRunPlugin(opts);
    default: {
      const never: never = name;
      throw new Error(`unknown firewall plugin ${String(never)}`);
    }
  }
}

/**
 * The plugin a config asks for: `only` (a named backend), else dry-run when
 * asked, else the configured one; `auto` runs the read-only detection probes.
 * Commands run in `netns` when given.
 */
export async function openPlugin(
  choice: { plugin: PluginName | 'auto'; dryRun: boolean; only?: PluginName; netns?: string; capacity?: number },
  options: Omit<PluginOptions, 'runner'>,
): Promise<FirewallPlugin> {
  const runner: CommandRunner = createRunner(netnsPrefix(choice.netns));
  let name: PluginName;
  if (choice.only) name = choice.only;
  else if (choice.dryRun || choice.plugin === 'dry-run') name = 'dry-run';
  else if (choice.plugin === 'auto') {
    name = await detectPlugin(runner, choice.capacity);
    options.logger.info({ plugin: name }, `plugin auto-detected: ${name}`);
  } else name = choice.plugin;
  return createPlugin(name, { ...options, runner });
}
export { NftMonitor } from './monitor.js';
export { relevantEvent, xtablesEventPlace, type RulesetChange } from './events.js';
