import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { AgentConfig } from '../config/load.js';
import { blockRefusal, isDnsName } from '../net/dns-name.js';
import type { Logger } from '../log.js';
import { DomainPolicy, type NamedZone } from '../policy/domain-policy.js';
import { agentHostNames } from './agent-names.js';
import { createDnsmasqPlugin } from './dnsmasq/plugin.js';
import { createDnsDryRun } from './dry-run.js';
import { createDnsRunner } from './exec.js';
import { rpzOriginOf } from './rpz/origin.js';
import { createRpzPlugin } from './rpz/plugin.js';
import type { DnsAnswer, DnsPlugin, DnsPluginName } from './types.js';
import { createUnboundPlugin, unboundRefusal } from './unbound/plugin.js';

export type { DnsPlugin, DnsPluginName, DnsApplyResult, LeftAlone } from './types.js';

/** What the host adds to the never-block rules (read by src/host, which the backends sit below). */
export interface HostNames {
  /** resolv.conf's search domains, each with the file naming it. */
  searchDomains: readonly NamedZone[];
}

/**
 * The never-block rules of this configuration on a host with `host`'s names. `env` is where the
 * API transport reads its proxy settings from (the process's environment), so the proxies and
 * NO_PROXY names it would use are protected as the API host is.
 */
export function domainPolicyOf(config: AgentConfig, host: HostNames, env: NodeJS.ProcessEnv = process.env): DomainPolicy {
  return new DomainPolicy({
    allowlist: config.domain_allowlist,
    agentHosts: agentHostNames({ baseUrl: config.base_url, proxy: config.proxy, env }),
    sharedExtra: config.shared_domains,
    clusterDomain: config.cluster_domain,
    searchDomains: host.searchDomains,
  });
}

export function dnsAnswerOf(config: AgentConfig): DnsAnswer {
  return config.dns_action === 'sinkhole' ? { action: 'sinkhole', address: config.sinkhole_address! } : { action: 'nxdomain' };
}

/** A path from config.json, relative to the config file's directory. */
export function configPath(config: AgentConfig, p: string): string {
  return isAbsolute(p) ? p : resolve(dirname(config.configPath), p);
}

/** Where the dry-run DNS plugin renders its zone. */
export function dnsDryRunOutput(config: AgentConfig): string {
  return join(config.state_dir, 'dns-dry-run.zone');
}

/** The resolver files the configured plugin writes (for doctor, the unit's write access, docs/url-feed.md). */
export function dnsOwnedFiles(config: AgentConfig): string[] {
  if (config.dns_plugin === 'unbound') return [configPath(config, config.unbound_conf_file)];
  if (config.dns_plugin === 'rpz' && config.rpz_file) return [configPath(config, config.rpz_file)];
  if (config.dns_plugin === 'dnsmasq') return [configPath(config, config.dnsmasq_file)];
  return [];
}

/**
 * The DNS plugin named by config (`dry-run` when asked), behind the one filter every write
 * to the resolver goes through: a name the policy protects (allowlist, the names the agent
 * itself needs, reverse zones, special-use names, the cluster domain, the host's search domains,
 * public suffix, shared platform), that is no valid DNS name, that carries a label RPZ reads as
 * a policy, that is too long for the RPZ zone, or too long for unbound to list whole, never
 * reaches a plugin, whatever the caller passes. `policy`: the host's (src/host's hostDomainPolicy), the one the selection used.
 */
export function createDnsPlugin(config: AgentConfig, o: { logger: Logger; dryRun: boolean; policy: DomainPolicy; now?: () => number; only?: DnsPluginName }): DnsPlugin {
  const name: DnsPluginName = o.only ?? (o.dryRun ? 'dry-run' : config.dns_plugin);
  const answer = dnsAnswerOf(config);
  const now = o.now ?? (() => Math.floor(Date.now() / 1000));
  const runner = createDnsRunner();
  let inner: DnsPlugin;
  switch (name) {
    case 'unbound':
      inner = createUnboundPlugin({ control: config.unbound_control, confFile: configPath(config, config.unbound_conf_file), answer, runner, logger: o.logger });
      break;
    case 'rpz':
      inner = createRpzPlugin({ zoneFile: configPath(config, config.rpz_file!), reload: config.rpz_reload, answer, runner, logger: o.logger, now });
      break;
    case 'dnsmasq':
      inner = createDnsmasqPlugin({ file: configPath(config, config.dnsmasq_file), reload: config.dnsmasq_reload, runner, logger: o.logger });
      break;
    case 'dry-run':
      inner = createDnsDryRun({ output: dnsDryRunOutput(config), answer, now });
      break;
  }
  const policy = o.policy;
  // A dry run shows what the configured backend would be given.
  const origin = name === 'rpz' || (name === 'dry-run' && config.dns_plugin === 'rpz') ? rpzOriginOf(config.rpz_reload) : undefined;
  const listedByUnbound = name === 'unbound' || (name === 'dry-run' && config.dns_plugin === 'unbound');
  return {
    name: inner.name,
    list: () => inner.list(),
    flush: () => inner.flush(),
    apply(names) {
      const kept: string[] = [];
      const refused: { name: string; why: string }[] = [];
      let dropped = 0;
      for (const n of names) {
        const why = blockRefusal(n, origin) ?? (listedByUnbound ? unboundRefusal(n) : undefined);
        if (why !== undefined) refused.push({ name: n, why });
        else if (policy.veto(n) === null) kept.push(n);
        else dropped++;
      }
      if (dropped) o.logger.warn({ dropped }, `${dropped} protected names were not sent to the resolver`);
      // A refused name is quoted only when it is a valid DNS name (no character a terminal would act on).
      if (refused.length) {
        const shown = refused.slice(0, 10).map((r) => (isDnsName(r.name) ? `${r.name}: ${r.why}` : r.why));
        o.logger.warn({ refused: refused.length, names: shown }, `${refused.length} names the resolver must not be given were left out: ${shown.join('; ')}`);
      }
      return inner.apply(kept);
    },
  };
}
