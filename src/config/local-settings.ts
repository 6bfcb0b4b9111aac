import type { AgentConfig } from './load.js';
import type { Settings } from './server.js';

/** The settings config.json gives, in force until the server's stored configuration says otherwise. */
export function localSettings(config: AgentConfig): Settings {
  return {
    maximum_rules: config.maximum_rules,
    score_threshold: config.score_threshold,
    sync_time: config.sync_time,
    running: true,
    version: null,
  };
}
