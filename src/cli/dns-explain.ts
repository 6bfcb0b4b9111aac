import { DnsStateStore } from '../agent/state/url-feed-state.js';
import type { AgentConfig } from '../config/load.js';
import { createDnsPlugin, dnsAnswerOf, dnsDryRunOutput, dnsOwnedFiles } from '../dns/index.js';
import { blockLine } from '../dns/where.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { DomainPolicy } from '../policy/domain-policy.js';

/** Where one name stands at the resolver, from the agent's own file and state (no resolver is asked). */
export interface NameAtResolver {
  plugin: string;
  file: string | null;
  /** The line the backend's file holds (or would hold) for the name. */
  line: string;
  /** The name is in the agent's file now. */
  in_force: boolean;
  /** What of someone else's holds the name, when the last apply left it alone. */
  left_alone: string | null;
  /** The file could not be read (not the agent's, a FIFO...). */
  error: string | null;
}

/** `name` is the name that decides (the blocked parent for a covered name). */
export async function nameAtResolver(config: AgentConfig, logger: Logger, name: string, policy: DomainPolicy): Promise<NameAtResolver> {
  const dryRun = config.plugin === 'dry-run';
  const plugin = createDnsPlugin(config, { logger, dryRun, policy });
  const file = dryRun ? dnsDryRunOutput(config) : (dnsOwnedFiles(config)[0] ?? null);
  let inForce = false;
  let error: string | null = null;
  try {
    inForce = (await plugin.list()).includes(name);
  } catch (err) {
    error = errorMessage(err);
  }
  const held = dryRun ? undefined : new DnsStateStore(config.state_dir, logger).small.leftAlone?.names[name];
  const where = plugin.name === 'unbound' ? 'unbound.conf' : plugin.name;
  return { plugin: plugin.name, file, line: blockLine(plugin.name, name, dnsAnswerOf(config)), in_force: inForce, left_alone: held ? `${held} in ${where}` : null, error };
}

/** The text lines of `explain NAME` about the resolver. */
export function resolverLines(at: NameAtResolver, selected: boolean): string[] {
  if (at.left_alone) return [`  left alone: ${at.left_alone} (someone else's, so the agent does not block the name there)`];
  if (at.error) return [`  at the resolver: ${at.error}`];
  const file = at.file ?? '-';
  if (at.in_force) return [`  at the resolver: ${at.plugin}, ${at.line} in ${file}${selected ? '' : ' (the next sync removes it)'}`];
  return selected ? [`  at the resolver: not in ${file} yet (the next sync writes ${at.line})`] : [];
}
