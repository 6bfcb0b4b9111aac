import type { AgentConfig } from '../config/load.js';
import { domainPolicyOf } from '../dns/index.js';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import type { DomainPolicy, NamedZone } from '../policy/domain-policy.js';
import { DEFAULT_HOST_PATHS, readSearchDomains, type HostPaths } from './facts.js';

/**
 * The host's search domains for the never-block rules: read as the resolvers of the protected
 * set are (the `netns` namespace's resolv.conf when it has one, else /etc/resolv.conf, and
 * systemd-resolved's), each with the file that names it. A file that cannot be read is logged
 * and left out, as for the protected set: the other rules still hold.
 */
export function hostSearchDomains(config: Pick<AgentConfig, 'netns'>, logger: Logger, paths: Partial<HostPaths> = {}): NamedZone[] {
  try {
    return readSearchDomains({ ...DEFAULT_HOST_PATHS, ...paths }, config.netns).map((d) => ({ name: d.name, source: d.file }));
  } catch (err) {
    logger.warn(`never-blocked names: could not read the search domains: ${errorMessage(err)}`);
    return [];
  }
}

/**
 * The never-block rules for names on this host: config.json's (allowlist, the agent's own names,
 * shared platforms, cluster_domain), the built-in ones (reverse zones, special-use names) and the
 * host's search domains.
 */
export function hostDomainPolicy(config: AgentConfig, logger: Logger, o: { paths?: Partial<HostPaths>; env?: NodeJS.ProcessEnv } = {}): DomainPolicy {
  const policy = domainPolicyOf(config, { searchDomains: hostSearchDomains(config, logger, o.paths) }, o.env);
  if (policy.ignoredZones.length) {
    const shown = policy.ignoredZones.map((z) => `${z.name} (${z.source})`).join(', ');
    logger.warn(
      { ignored: policy.ignoredZones },
      `public suffixes are not kept from blocking as a search or cluster domain (that would keep every name under them): ${shown}; fix the search line of resolv.conf, or cluster_domain in config.json`,
    );
  }
  return policy;
}
