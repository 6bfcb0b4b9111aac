import { loadConfig, type AgentConfig, type LoadOptions } from '../config/load.js';
import { checkConfiguredNames } from '../firewall/index.js';

/**
 * config.json as every command loads it: the file's shape (src/config), then the owned
 * names against what the firewall allows. One loader, so start-up, a reload and
 * check-config refuse the same files with the same message.
 */
export function loadAgentConfig(path: string, options: LoadOptions = {}): AgentConfig {
  const config = loadConfig(path, options);
  checkConfiguredNames(config);
  return config;
}
