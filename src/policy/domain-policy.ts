import { isListedPublicSuffix, isPublicSuffix, selfAndParents } from '../feed/host.js';
import { REVERSE_ZONES, SPECIAL_USE_NAMES } from './reserved-names.js';
import { SHARED_PLATFORMS } from './shared-platforms.js';

/** Why a name is never blocked at the resolver, whatever the feed says. */
export type DomainVeto = 'allowlist' | 'reverse_zone' | 'special_use' | 'cluster_domain' | 'search_domain' | 'public_suffix' | 'shared_platform';

/** A name a rule keeps, with where it was named (a config key, a file, an environment variable). */
export interface NamedZone {
  readonly name: string;
  readonly source: string;
}

/** The rule that keeps a name: its word, the name it protects, and where that name comes from. */
export interface KeptBy {
  readonly rule: DomainVeto;
  readonly zone: string;
  readonly source: string;
}

export interface DomainPolicyInput {
  /** config `domain_allowlist`, normalised names. */
  allowlist: readonly string[];
  /** The API server's host name (a name, not an address), if any. */
  apiHost?: string | undefined;
  /** Other names the agent's own traffic needs: its proxies, the NO_PROXY names its transport honours. */
  agentHosts?: readonly (string | NamedZone)[] | undefined;
  /** config `shared_domains`, added to the shipped list. */
  sharedExtra: readonly string[];
  /** config `cluster_domain`: Kubernetes' cluster domain. */
  clusterDomain?: string | undefined;
  /** The host's search domains (resolv.conf's `search`), read by src/host. */
  searchDomains?: readonly NamedZone[] | undefined;
}

/**
 * The never-block rules for names (the first rule of the selection), shared by the selection,
 * `explain`, and every resolver plugin before it writes (so no path can block a protected
 * name), like the protected set for addresses. A zone is kept with every name under it: the
 * allowlist, the reverse zones, the special-use names, the cluster domain, the search domains.
 * The names the agent itself needs (the API host, its proxies) are kept as they are, not
 * what is under them. A blocked name covers its subdomains, so every parent of a kept name is
 * kept too (`vendor.example` covers `api.vendor.example`, `corp.lan` covers the proxy
 * `proxy.corp.lan`). A search domain or cluster domain that the Public Suffix List lists (`com`,
 * `co.uk`) is no zone of its own: it would keep every name under it; an unlisted one (`lan`,
 * `home`, a home router's search domain) is kept.
 */
export class DomainPolicy {
  /** Zones kept with everything under them, and why. */
  private readonly zones = new Map<string, KeptBy>();
  /** Names kept because blocking them would cover a kept name (the agent's own names included, as they are). */
  private readonly covering = new Map<string, KeptBy>();
  private readonly shared: Map<string, string>;
  /** Search domains and a cluster domain that are listed public suffixes, left out (`search com`); `search lan` is kept. */
  readonly ignoredZones: NamedZone[] = [];

  constructor(input: DomainPolicyInput) {
    const zone = (name: string, kept: KeptBy) => {
      if (!this.zones.has(name)) this.zones.set(name, kept);
      this.cover(name, kept);
    };
    for (const a of input.allowlist) zone(a, { rule: 'allowlist', zone: a, source: 'domain_allowlist' });
    const agent: NamedZone[] = [...(input.apiHost ? [{ name: input.apiHost, source: 'base_url' }] : []), ...(input.agentHosts ?? []).map((h) => (typeof h === 'string' ? { name: h, source: 'the agent\'s own traffic' } : h))];
    for (const h of agent) this.cover(h.name, { rule: 'allowlist', zone: h.name, source: h.source });
    // A listed public suffix never: `cluster_domain: "com"` or `search com` would keep every name under it.
    const named = (z: NamedZone, rule: DomainVeto) => {
      if (isListedPublicSuffix(z.name)) this.ignoredZones.push(z);
      else zone(z.name, { rule, zone: z.name, source: z.source });
    };
    if (input.clusterDomain) named({ name: input.clusterDomain, source: 'cluster_domain' }, 'cluster_domain');
    for (const s of input.searchDomains ?? []) named(s, 'search_domain');
    for (const n of SPECIAL_USE_NAMES) zone(n, { rule: 'special_use', zone: n, source: 'built in' });
    for (const n of REVERSE_ZONES) zone(n, { rule: 'reverse_zone', zone: n, source: 'built in' });
    this.shared = new Map([...SHARED_PLATFORMS.map((n) => [n, 'shipped list'] as const), ...input.sharedExtra.map((n) => [n, 'shared_domains'] as const)]);
  }

  /** `name` and each of its parents cover `kept`. */
  private cover(name: string, kept: KeptBy): void {
    for (const p of selfAndParents(name)) if (!this.covering.has(p)) this.covering.set(p, kept);
  }

  veto(name: string): DomainVeto | null {
    return this.keptBy(name)?.rule ?? null;
  }

  /** The rule that keeps `name` from being blocked, or null: the zone it is at or under first, then one it would cover. */
  keptBy(name: string): KeptBy | null {
    for (const p of selfAndParents(name)) {
      const z = this.zones.get(p);
      if (z) return z;
    }
    const c = this.covering.get(name);
    if (c) return c;
    if (isPublicSuffix(name)) return { rule: 'public_suffix', zone: name, source: 'Public Suffix List' };
    for (const p of selfAndParents(name)) {
      const s = this.shared.get(p);
      if (s) return { rule: 'shared_platform', zone: p, source: s };
    }
    return null;
  }
}
