import { join } from 'node:path';
import type { Logger } from '../log.js';
import { createLogger, demoteWarnings } from '../log.js';
import { resolveConfigPath, type AgentConfig, type LoadOptions } from '../config/load.js';
import { ApiClient } from '../api/client.js';
import { ThreatIntelApi } from '../api/threat-intel.js';
import { StateStore } from '../agent/state/store.js';
import { flushPreviousBackends } from '../agent/state/previous-backends.js';
import { instanceId } from '../agent/state/instance-id.js';
import { openPlugin as openFirewallPlugin, type FirewallPlugin, type PluginName, type PluginOptions } from '../firewall/index.js';
import { AGENT_VERSION } from '../version.js';
import { loadAgentConfig } from './load-config.js';

export interface GlobalOptions {
  config?: string;
}

/** Load config.json and build a logger at its level. */
export function loadContext(opts: GlobalOptions, options: LoadOptions = {}): { config: AgentConfig; logger: Logger } {
  const path = resolveConfigPath(opts.config);
  const config = loadAgentConfig(path, options);
  const logger = createLogger({ level: process.env.WCF_LOG_LEVEL ? undefined : config.log_level, format: config.log_format });
  return { config, logger };
}

export function createApi(config: AgentConfig, logger: Logger): ThreatIntelApi {
  return new ThreatIntelApi(
    new ApiClient({
      baseUrl: config.base_url,
      token: config.token,
      authScheme: config.auth_scheme,
      connectTimeoutMs: config.connect_timeout_ms,
      requestTimeoutMs: config.request_timeout_ms,
      requestDeadlineMs: config.request_deadline_ms,
      minBytesPerSecond: config.min_bytes_per_second,
      retries: config.retries,
      maxResponseBytes: Math.floor(config.max_response_mb * 1024 * 1024),
      caFile: config.ca_file,
      proxy: config.proxy,
      userAgent: `wcf-agent/${AGENT_VERSION}`,
      logger: demoteWarnings(logger),
      retryMinDelayMs: process.env.WCF_RETRY_MIN_DELAY_MS ? Number(process.env.WCF_RETRY_MIN_DELAY_MS) : undefined,
    }),
  );
}

export function openState(config: AgentConfig, logger: Logger): StateStore {
  // A dry run beside a real backend (--dry-run) is not what the host enforces: the history leaves it out.
  return new StateStore(config.state_dir, logger, { maxMb: config.history_max_mb, dryRun: config.plugin === 'dry-run' });
}

/** The plugin named by config (or --dry-run); `auto` probes nftables, then ipset, then iptables. */
export function openPlugin(config: AgentConfig, logger: Logger, dryRun: boolean, only?: PluginName, capacity = config.maximum_rules): Promise<FirewallPlugin> {
  return openFirewallPlugin({ plugin: config.plugin, dryRun, only, netns: config.netns, capacity }, pluginOptions(config, logger));
}

/** This agent's instance id for the markers it writes (none when the state dir can be neither read nor written: a read-only user). */
function instanceOf(stateDir: string): { instance?: string } {
  const id = instanceId(stateDir);
  return id ? { instance: id } : {};
}

/** What every plugin is built with, from config.json (the runner is added by whoever builds it). */
export function pluginOptions(config: AgentConfig, logger: Logger): Omit<PluginOptions, 'runner'> {
  return {
    names: { setName: config.set_name, chainName: config.chain_name, tableName: config.table_name },
    hookChains: config.hook_chains,
    action: config.action,
    direction: config.direction,
    logBlocked: config.log_blocked,
    ...(config.drop_hook ? { dropHook: config.drop_hook } : {}),
    logger,
    dryRunOutput: config.dry_run_output ?? join(config.state_dir, `dry-run.${config.dry_run_format}`),
    dryRunFormat: config.dry_run_format,
    ...instanceOf(config.state_dir),
  };
}

/** The configured plugin, after removing what a previously used kernel backend left behind. */
export async function openPluginForSync(config: AgentConfig, logger: Logger, state: StateStore, dryRun: boolean): Promise<FirewallPlugin> {
  // `auto` is sized for the larger of the local maximum_rules and the server's last one.
  const plugin = await openPlugin(config, logger, dryRun, undefined, Math.max(config.maximum_rules, state.small.settings?.maximum_rules ?? 0));
  await flushPreviousBackends(plugin, state, logger, (name) => openPlugin(config, logger, false, name));
  return plugin;
}
