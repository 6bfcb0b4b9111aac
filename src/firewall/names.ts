import type { AgentConfig } from '../config/load.js';
import { ConfigError } from '../errors.js';
import type { OwnedNames } from './plugin.js';

/**
 * Limits of the names the agent gives its firewall objects. The names come from
 * config (set_name, chain_name, table_name, hook_chains) and end up in command
 * lines and in ipset/iptables-restore/nft scripts, so they are held to a strict
 * character set: no whitespace, quotes, braces or leading dashes can reach a
 * script.
 */

/** IPSET_MAXNAMELEN is 32 including the terminating NUL. */
export const IPSET_NAME_MAX = 31;
/** Suffix of the temporary set built for an atomic swap. */
export const TEMP_SET_SUFFIX = '-tmp';
/** The set name must leave room for the temp suffix. */
export const SET_NAME_MAX = IPSET_NAME_MAX - TEMP_SET_SUFFIX.length;
/** XT_EXTENSION_MAXNAMELEN is 29 including NUL: iptables refuses longer chain names. */
export const CHAIN_NAME_MAX = 28;
/** nft allows 255; anything longer than this is a typo, not a name. */
export const NFT_NAME_MAX = 64;

/** Chains the agent may hook into. DOCKER-USER is Docker's documented place for user rules. */
export const HOOKABLE_CHAINS: readonly string[] = ['INPUT', 'FORWARD', 'OUTPUT', 'DOCKER-USER'];

/** ipset and nft both accept this; `-` is allowed because the default is `wcf-blocklist`. */
const SET_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*$/;
const CHAIN_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]*$/;
const TABLE_NAME_RE = /^[A-Za-z][A-Za-z0-9_]*$/;

/** Built-in chains and standard targets: iptables refuses (or misreads) user chains with these names. */
const IPTABLES_RESERVED = new Set([
  'INPUT', 'OUTPUT', 'FORWARD', 'PREROUTING', 'POSTROUTING',
  'ACCEPT', 'DROP', 'REJECT', 'RETURN', 'QUEUE', 'NFQUEUE', 'LOG', 'NFLOG', 'MARK', 'CONNMARK',
  'MASQUERADE', 'SNAT', 'DNAT', 'REDIRECT', 'TRACE', 'CT', 'NOTRACK', 'AUDIT', 'TCPMSS', 'TEE',
  'DOCKER', 'DOCKER-USER', 'DOCKER-ISOLATION-STAGE-1', 'DOCKER-ISOLATION-STAGE-2', 'DOCKER-FORWARD',
]);

/**
 * nft keywords a bare identifier must not be (the scanner would read them as
 * keywords and the script would not parse). Not the full grammar: the words a
 * human might plausibly pick for a table or set.
 */
const NFT_KEYWORDS = new Set([
  'table', 'chain', 'set', 'map', 'element', 'elements', 'rule', 'flush', 'add', 'delete', 'create', 'insert',
  'replace', 'list', 'reset', 'ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev', 'filter', 'nat', 'route', 'type',
  'hook', 'priority', 'policy', 'accept', 'drop', 'reject', 'counter', 'log', 'limit', 'timeout', 'flags',
  'interval', 'constant', 'dynamic', 'size', 'prefix', 'saddr', 'daddr', 'jump', 'goto', 'return', 'continue',
  'queue', 'meta', 'ct', 'input', 'output', 'forward', 'prerouting', 'postrouting', 'ingress', 'egress', 'with',
  'define', 'include', 'describe', 'monitor', 'export', 'import', 'tcp', 'udp', 'icmp', 'ether', 'vlan',
]);

/**
 * Names other firewall managers give their own tables, sets and chains. The
 * agent must never be configured onto one of them: it would take over (and
 * `flush` would delete) what ufw, firewalld, Docker, fail2ban, CrowdSec,
 * libvirt, Kubernetes, Calico, Cilium or NixOS manage. Matched without regard
 * to case, since the managers differ in case between their iptables and nft
 * objects (`ufw-user-input`, `DOCKER-USER`, `f2b-sshd`).
 */
const MANAGER_NAMES: readonly { re: RegExp; owner: string }[] = [
  { re: /^firewalld/i, owner: 'firewalld' },
  { re: /^ufw/i, owner: 'ufw' },
  { re: /^docker/i, owner: 'Docker' },
  { re: /^f2b-/i, owner: 'fail2ban' },
  { re: /^fail2ban/i, owner: 'fail2ban' },
  { re: /^crowdsec/i, owner: 'CrowdSec' },
  { re: /^libvirt/i, owner: 'libvirt' },
  { re: /^kube-/i, owner: 'Kubernetes' },
  { re: /^cali-/i, owner: 'Calico' },
  { re: /^cilium/i, owner: 'Cilium' },
  { re: /^nixos[-_]fw/i, owner: 'the NixOS firewall' },
  { re: /^(?:input|output|forward|prerouting|postrouting)$/i, owner: 'the kernel (a built-in chain)' },
  { re: /^(?:filter|nat|mangle|raw|security)$/i, owner: 'iptables (a standard table)' },
];

/** The manager whose name this is, or undefined. */
export function managerOf(name: string): string | undefined {
  return MANAGER_NAMES.find((m) => m.re.test(name))?.owner;
}

function managerProblem(key: string, name: unknown): string | undefined {
  if (typeof name !== 'string') return undefined;
  const owner = managerOf(name);
  return owner ? `${key}: ${JSON.stringify(name)} is a name ${owner} uses for its own objects; the agent would take them over. Pick a name of the agent's own` : undefined;
}

/** Name of the temporary set built and swapped in for full replacements (ipset). */
export function tempSetName(setName: string): string {
  return `${setName}${TEMP_SET_SUFFIX}`;
}

/**
 * Check the names the agent will own. Returns `path: message` problems (empty
 * when fine); paths are the config.json keys. checkConfiguredNames (below) calls it.
 */
export function validateOwnedNames(names: OwnedNames, hookChains: readonly string[]): string[] {
  const problems: string[] = [];

  const set = names.setName;
  if (typeof set !== 'string' || set.length === 0) {
    problems.push('set_name: must not be empty');
  } else {
    if (!SET_NAME_RE.test(set)) {
      problems.push(`set_name: ${JSON.stringify(set)} must start with a letter and contain only letters, digits, '_' and '-'`);
    }
    if (set.length > SET_NAME_MAX) {
      problems.push(
        `set_name: ${JSON.stringify(set)} is ${set.length} characters; at most ${SET_NAME_MAX} (ipset names are limited to ${IPSET_NAME_MAX}, and the temporary set ${JSON.stringify(tempSetName(set))} used for atomic swaps must fit too)`,
      );
    }
    if (NFT_KEYWORDS.has(set.toLowerCase())) problems.push(`set_name: ${JSON.stringify(set)} is an nft keyword; pick another name`);
  }

  const chain = names.chainName;
  if (typeof chain !== 'string' || chain.length === 0) {
    problems.push('chain_name: must not be empty');
  } else {
    if (!CHAIN_NAME_RE.test(chain)) {
      problems.push(`chain_name: ${JSON.stringify(chain)} must start with a letter and contain only letters, digits, '_' and '-'`);
    }
    if (chain.length > CHAIN_NAME_MAX) {
      problems.push(`chain_name: ${JSON.stringify(chain)} is ${chain.length} characters; iptables allows at most ${CHAIN_NAME_MAX}`);
    }
    if (IPTABLES_RESERVED.has(chain.toUpperCase())) {
      problems.push(`chain_name: ${JSON.stringify(chain)} is a built-in chain, a standard target or a chain another program owns`);
    }
  }

  const table = names.tableName;
  if (typeof table !== 'string' || table.length === 0) {
    problems.push('table_name: must not be empty');
  } else {
    if (!TABLE_NAME_RE.test(table)) {
      problems.push(`table_name: ${JSON.stringify(table)} must start with a letter and contain only letters, digits and '_'`);
    }
    if (table.length > NFT_NAME_MAX) problems.push(`table_name: ${JSON.stringify(table)} is longer than ${NFT_NAME_MAX} characters`);
    if (NFT_KEYWORDS.has(table.toLowerCase())) problems.push(`table_name: ${JSON.stringify(table)} is an nft keyword; pick another name`);
  }

  for (const [key, name] of [['set_name', set], ['chain_name', chain], ['table_name', table]] as const) {
    const p = managerProblem(key, name);
    // One problem per key is enough: a built-in chain or keyword was already named above.
    if (p && !problems.some((q) => q.startsWith(`${key}: `))) problems.push(p);
  }

  if (!Array.isArray(hookChains) || hookChains.length === 0) {
    problems.push('hook_chains: give at least one chain (INPUT, FORWARD, OUTPUT, DOCKER-USER)');
  } else {
    const seen = new Set<string>();
    hookChains.forEach((h, i) => {
      if (!HOOKABLE_CHAINS.includes(h)) {
        problems.push(`hook_chains.${i}: ${JSON.stringify(h)} is not a chain the agent can hook into; use one of ${HOOKABLE_CHAINS.join(', ')}`);
      } else if (seen.has(h)) {
        problems.push(`hook_chains.${i}: ${JSON.stringify(h)} is listed twice`);
      }
      seen.add(h);
      if (typeof chain === 'string' && h === chain) problems.push(`hook_chains.${i}: the agent's own chain cannot hook into itself`);
    });
  }
  return problems;
}

/**
 * The configured names checked against the kernel's limits and other tools' names, where
 * names meet the firewall. Every command that loads config.json calls it (start-up, a
 * reload, check-config) through the CLI's one loader, so a bad name stops each of them.
 */
export function checkConfiguredNames(config: Pick<AgentConfig, 'set_name' | 'chain_name' | 'table_name' | 'hook_chains' | 'configPath'>): void {
  const problems = validateOwnedNames({ setName: config.set_name, chainName: config.chain_name, tableName: config.table_name }, config.hook_chains);
  if (problems.length) throw new ConfigError(`${config.configPath} is not valid`, problems);
}
