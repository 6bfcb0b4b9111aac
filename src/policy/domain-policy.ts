import { isPublicSuffix, selfAndParents } from '../feed/host.js';
import { SHARED_PLATFORMS } from './shared-platforms.js';

/** Why a name is never blocked at the resolver, whatever the feed says. */
export type DomainVeto = 'allowlist' | 'public_suffix' | 'shared_platform';

export interface DomainPolicyInput {
  /** config `domain_allowlist`, normalised names. */
  allowlist: readonly string[];
  /** The API server's host name (a name, not an address), if any. */
  apiHost: string | undefined;
  /** Other names the agent's own traffic needs: its proxies, the NO_PROXY names its transport honours. */
  agentHosts?: readonly string[] | undefined;
  /** config `shared_domains`, added to the shipped list. */
  sharedExtra: readonly string[];
}

/**
 * The never-block rules for names (the first rule of the selection), shared by the selection,
 * `explain`, and every resolver plugin before it writes (so no path can block a protected
 * name). A blocked name covers its subdomains, so a name is also protected when blocking it
 * would cover an allowlisted name, the API host or another name the agent needs (`vendor.example`
 * covers `api.vendor.example`, `corp.lan` covers the proxy `proxy.corp.lan`).
 */
export class DomainPolicy {
  private readonly allow: Set<string>;
  /** Every allowlisted name, the API host and the agent's other names, and each of their parents. */
  private readonly covering = new Set<string>();
  private readonly shared: Set<string>;

  constructor(input: DomainPolicyInput) {
    this.allow = new Set(input.allowlist);
    for (const a of [...input.allowlist, ...(input.apiHost ? [input.apiHost] : []), ...(input.agentHosts ?? [])]) for (const p of selfAndParents(a)) this.covering.add(p);
    this.shared = new Set([...SHARED_PLATFORMS, ...input.sharedExtra]);
  }

  veto(name: string): DomainVeto | null {
    if (this.covering.has(name)) return 'allowlist';
    for (const p of selfAndParents(name)) if (this.allow.has(p)) return 'allowlist';
    if (isPublicSuffix(name)) return 'public_suffix';
    for (const p of selfAndParents(name)) if (this.shared.has(p)) return 'shared_platform';
    return null;
  }
}
