import { DryRunPlugin } from './dry-run.js';
import { createRunner } from './exec.js';
import { IpsetPlugin } from './ipset.js';
import { IptablesPlugin } from './iptables.js';
import { NftablesPlugin } from './nftables.js';
import type { FirewallPlugin, PluginName, PluginOptions } from './types.js';

export { detectPlugin } from './detect.js';
export { createRunner } from './exec.js';
export { validateOwnedNames } from './names.js';
export type * from './types.js';

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
