/** What a blocked name answers: NXDOMAIN, or the sinkhole address for the name and its subdomains. */
export type DnsAnswer = { action: 'nxdomain' } | { action: 'sinkhole'; address: string };

export type DnsPluginName = 'unbound' | 'rpz' | 'dry-run';

export interface DnsApplyResult {
  added: number;
  removed: number;
  /** Names in force after the apply. */
  total: number;
  /** Names left out because the resolver already holds a zone of that name that is not the agent's. */
  foreign: string[];
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
