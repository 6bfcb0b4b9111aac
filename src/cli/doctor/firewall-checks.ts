import type { AgentConfig } from '../../config/load.js';
import { errorMessage } from '../../errors.js';
import { PLUGIN_TOOLS, TOOLS, detectPlugin, foreignSummary, type FirewallPlugin, type PluginName, type Tool } from '../../firewall/index.js';
import { type CommandRunner } from '../../exec/runner.js';
import { check, type CheckResult } from './check.js';
import { nftScaleWarning } from '../../firewall/nft/scale.js';

export function toolsCheck(plugin: AgentConfig['plugin'], tools: Map<Tool, string | null>): CheckResult {
  const found = TOOLS.filter((t) => tools.get(t)).map((t) => tools.get(t)!);
  const missing = TOOLS.filter((t) => !tools.get(t));
  const text = `found: ${found.join('; ') || 'none'}${missing.length ? `; missing: ${missing.join(', ')}` : ''}`;
  if (plugin === 'dry-run') return check('firewall', 'firewall tools', 'ok', `${text} (not needed for dry-run)`);
  const complete = (p: keyof typeof PLUGIN_TOOLS) => PLUGIN_TOOLS[p].every((t) => tools.get(t));
  if (plugin === 'auto') {
    if ((Object.keys(PLUGIN_TOOLS) as (keyof typeof PLUGIN_TOOLS)[]).some(complete)) return check('firewall', 'firewall tools', 'ok', text);
    return check('firewall', 'firewall tools', 'fail', text, 'install nftables (or ipset and iptables) and make sure they are in PATH');
  }
  const lacking = PLUGIN_TOOLS[plugin].filter((t) => !tools.get(t));
  if (lacking.length === 0) return check('firewall', 'firewall tools', 'ok', text);
  return check('firewall', 'firewall tools', 'fail', `${text}; plugin ${plugin} needs ${lacking.join(', ')}`, `install ${lacking.join(', ')} or choose another plugin in config.json`);
}

/** Which backend the agent would use; `auto` runs the same read-only probes as the agent. */
export async function pluginCheck(plugin: AgentConfig['plugin'], runner: CommandRunner, capacity = 0): Promise<{ result: CheckResult; effective: PluginName | undefined }> {
  let auto: PluginName | undefined;
  let autoError: string | undefined;
  try {
    auto = await detectPlugin(runner, capacity);
  } catch (err) {
    autoError = errorMessage(err);
  }
  const autoText = auto ? `auto would pick ${auto}` : `auto would find no usable backend: ${autoError}`;
  const slow = nftScaleWarning(capacity);
  if (plugin === 'auto') {
    if (auto === 'nftables' && slow) return { result: check('firewall', 'plugin', 'warn', `plugin auto: ${autoText} (ipset is not usable here); ${slow}`, 'install ipset and iptables'), effective: auto };
    if (auto) return { result: check('firewall', 'plugin', 'ok', `plugin auto: ${autoText}`), effective: auto };
    return { result: check('firewall', 'plugin', 'fail', `plugin auto: ${autoText}`, 'run as root (CAP_NET_ADMIN), load nf_tables/ip_tables, or set plugin explicitly'), effective: undefined };
  }
  if (plugin === 'dry-run') return { result: check('firewall', 'plugin', 'ok', `plugin dry-run: no firewall is touched (${autoText})`), effective: 'dry-run' };
  if (plugin === 'nftables' && slow) return { result: check('firewall', 'plugin', 'warn', `plugin nftables (configured; ${autoText}); ${slow}`, 'set plugin ipset (or auto) in config.json'), effective: plugin };
  return { result: check('firewall', 'plugin', 'ok', `plugin ${plugin} (configured; ${autoText})`), effective: plugin };
}

const NOT_YET = 'not created yet (the first sync creates it)';

/** The plugin's owned objects, read-only: present, absent (warn), or unreadable (warn). */
export async function objectsCheck(plugin: FirewallPlugin): Promise<CheckResult> {
  const objects = await plugin.objects();
  if (objects.length === 0) return check('firewall', 'firewall objects', 'ok', `${plugin.name}: nothing to check (renders to stdout)`);
  const text = objects.map((o) => `${o.what} ${o.state}`).join(', ');
  const errors = objects.filter((o) => o.state === 'unreadable').map((o) => `${o.what}: ${o.error ?? 'unreadable'}`);
  const foreign = objects.filter((o) => o.state === 'foreign');
  if (foreign.length) {
    return check('firewall', 'firewall objects', 'fail', foreignSummary(foreign)!, 'the agent never takes over what is not its own: choose another set_name/chain_name/table_name, or remove that object if it is a leftover');
  }
  if (errors.length) return check('firewall', 'firewall objects', 'warn', `cannot read: ${errors.join('; ')}`, 'run doctor as the service user (root or CAP_NET_ADMIN)');
  if (objects.every((o) => o.state === 'present')) return check('firewall', 'firewall objects', 'ok', text);
  if (objects.every((o) => o.state === 'absent')) return check('firewall', 'firewall objects', 'warn', `${text}: ${NOT_YET}`, 'absent is also normal while running is off in the stored configuration');
  return check('firewall', 'firewall objects', 'warn', `${text}: incomplete`, 'the next sync re-creates what is missing');
}
