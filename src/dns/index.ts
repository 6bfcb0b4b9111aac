import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { AgentConfig } from '../config/load.js';
import { isDnsName } from '../net/dns-name.js';
import type { Logger } from '../log.js';
import { DomainPolicy } from '../policy/domain-policy.js';
import { createDnsDryRun } from './dry-run.js';
import { createDnsRunner } from './exec.js';
import { createRpzPlugin } from './rpz/plugin.js';
import type { DnsAnswer, DnsPlugin, DnsPluginName } from './types.js';
import { createUnboundPlugin } from './unbound/plugin.js';

export type { DnsPlugin, DnsPluginName, DnsApplyResult } from './types.js';

/** The API host when base_url names one (an address is protected by the firewall rules instead). */
export function apiHostName(baseUrl: string): string | undefined {
  const h = URL.parse(baseUrl)?.hostname.replace(/\.+$/, '');
  return h && isDnsName(h) ? h : undefined;
}

export function domainPolicyOf(config: AgentConfig): DomainPolicy {
  return new DomainPolicy({ allowlist: config.domain_allowlist, apiHost: apiHostName(config.base_url), sharedExtra: config.shared_domains });
}

export function dnsAnswerOf(config: AgentConfig): DnsAnswer {
  return config.dns_action === 'sinkhole' ? { action: 'sinkhole', address: config.sinkhole_address! } : { action: 'nxdomain' };
}

/** A path from config.json, relative to the config file's directory. */
function configPath(config: AgentConfig, p: string): string {
  return isAbsolute(p) ? p : resolve(dirname(config.configPath), p);
}

/** Where the dry-run DNS plugin renders its zone. */
export function dnsDryRunOutput(config: AgentConfig): string {
  return join(config.state_dir, 'dns-dry-run.zone');
}

/** The resolver files the configured plugin writes (for doctor, the unit's write access, README). */
export function dnsOwnedFiles(config: AgentConfig): string[] {
  if (config.dns_plugin === 'unbound') return [configPath(config, config.unbound_conf_file)];
  if (config.dns_plugin === 'rpz' && config.rpz_file) return [configPath(config, config.rpz_file)];
  return [];
}

/**
 * The DNS plugin named by config (`dry-run` when asked), behind the one filter every write
 * to the resolver goes through: a name the policy protects (allowlist, API host, public
 * suffix, shared platform) or that is no valid DNS name never reaches a plugin, whatever
 * the caller passes.
 */
export function createDnsPlugin(config: AgentConfig, o: { logger: Logger; dryRun: boolean; now?: () => number; only?: DnsPluginName }): DnsPlugin {
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
    case 'dry-run':
      inner = createDnsDryRun({ output: dnsDryRunOutput(config), answer, now });
      break;
  }
  const policy = domainPolicyOf(config);
  return {
    name: inner.name,
    list: () => inner.list(),
    flush: () => inner.flush(),
    apply(names) {
      const kept: string[] = [];
      let dropped = 0;
      for (const n of names) {
        if (isDnsName(n) && policy.veto(n) === null) kept.push(n);
        else dropped++;
      }
      if (dropped) o.logger.warn({ dropped }, `${dropped} protected or invalid names were not sent to the resolver`);
      return inner.apply(kept);
    },
  };
}
