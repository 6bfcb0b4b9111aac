import type { AgentConfig } from '../../config/load.js';
import type { ThreatIntelApi } from '../../api/threat-intel.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import type { StateStore } from '../state/store.js';

/** What the daemon runs with, built from a config at start and on each reload. */
export interface DaemonParts {
  config: AgentConfig;
  api: ThreatIntelApi;
  plugin: FirewallPlugin;
  state: StateStore;
}
