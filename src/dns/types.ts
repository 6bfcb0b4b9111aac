/** What a blocked name answers: NXDOMAIN, or the sinkhole address for the name and its subdomains. */
export type DnsAnswer = { action: 'nxdomain' } | { action: 'sinkhole'; address: string };

export type DnsPluginName = 'unbound' | 'rpz' | 'dnsmasq' | 'dry-run';

/** A name the agent would block but leaves alone, and what of someone else's holds it. */
export interface LeftAlone {
  name: string;
  /** In the resolver's words: `local-data "www.evil.test. 300 IN A 10.9.9.9"`, `local-zone "evil.test." static`. */
  held: string;
}

export interface DnsApplyResult {
  added: number;
  removed: number;
  /** Names in force after the apply. */
  total: number;
  /** Names left out because the resolver already holds something of someone else's there (the names of leftAlone). */
  foreign: string[];
  leftAlone: LeftAlone[];
}

/**
 * A resolver backend. `apply` makes the agent's blocked names exactly `names` (each covering
 * its subdomains), touching only what the agent owns; a failure throws DnsError and leaves
 * what was applied before in force. `list` answers the names the agent has applied; `flush`
 * removes them all, and nothing else.
 */
export interface DnsPlugin {
  readonly name: DnsPluginName;
  apply(names: readonly string[]): Promise<DnsApplyResult>;
  list(): Promise<string[]>;
  flush(): Promise<void>;
}
