import { loadConfig, type AgentConfig } from '../config/load.js';
import { checkConfiguredNames } from '../firewall/index.js';

/**
 * config.json as every command loads it: the file's shape (src/config), then the owned
 * names against what the firewall allows. One loader, so start-up, a reload and
 * check-config refuse the same files with the same message.
 */
export function loadAgentConfig(path: string): AgentConfig {
  const config = loadConfig(path);
  checkConfiguredNames(config);
  return config;
}
