import type { Logger } from 'pino';
import type { Cidr } from '../net/ipv4.js';

export type PluginName = 'ipset' | 'nftables' | 'iptables' | 'dry-run';
export const PLUGIN_NAMES: readonly PluginName[] = ['ipset', 'nftables', 'iptables', 'dry-run'];

/** One address or network to block. */
export interface FirewallEntry {
  /** Canonical CIDR text from src/net/ipv4.ts: `a.b.c.d` or `a.b.c.0/24`. */
  readonly cidr: string;
  /**
   * Seconds until the kernel removes the entry by itself (the decayed score
   * crosses the threshold then). Undefined = no timeout (manual blocks).
   */
  readonly timeoutSeconds?: number | undefined;
  /**
   * `cidr` already parsed (a Cidr whose `text` is `cidr`), so it is not parsed
   * again: the cycle passes the Cidr its selection holds, which at a million
   * entries saves a million short-lived objects. Optional.
   */
  readonly parsed?: Cidr | undefined;
}

/** Names of the objects the agent owns. Validated at config load. */
export interface OwnedNames {
  /** ipset set name and nft set name (default `wcf-blocklist`). */
  readonly setName: string;
  /** iptables chain (default `WCF-AGENT`). */
  readonly chainName: string;
  /** nft table in family inet (default `wcf_agent`). */
  readonly tableName: string;
}

/** Runs one command with an argument array and optional stdin. Never a shell. */
export interface CommandRunner {
  run(file: string, args: readonly string[], options?: { input?: string }): Promise<{ stdout: string; stderr: string }>;
}

export interface PluginOptions {
  readonly names: OwnedNames;
  /** Built-in chains to hook the agent's chain into (iptables/ipset); default INPUT, FORWARD (+DOCKER-USER if present). */
  readonly hookChains: readonly string[];
  readonly action: 'DROP' | 'REJECT';
  /** Log blocked packets (rate-limited) before the action. */
  readonly logBlocked: boolean;
  /** Capacity to size sets for (maximum_rules). */
  readonly capacity: number;
  readonly logger: Logger;
  /** Where commands run; tests pass one that prefixes `ip netns exec NS`. */
  readonly runner?: CommandRunner;
  /** dry-run only: the file the rendered ruleset is written to. */
  readonly dryRunOutput?: string;
  /** dry-run only: which syntax to render (`ipset` restore or `nft` script). */
  readonly dryRunFormat?: 'ipset' | 'nft';
}

export interface ApplyResult {
  readonly added: number;
  readonly removed: number;
  /** Entries whose timeout was refreshed. */
  readonly updated: number;
  /** `full` = rebuilt and swapped, `delta` = add/del in place. */
  readonly mode: 'full' | 'delta' | 'none';
  /** Things the plugin found missing and re-created this cycle (self-healing). */
  readonly repaired: readonly string[];
}

export interface FirewallPlugin {
  readonly name: PluginName;
  /**
   * Make the kernel hold exactly `entries` (already selected, de-duplicated,
   * capped). Atomic: on failure the previously applied set stays in place and
   * a FirewallError is thrown. Creates and repairs owned objects as needed.
   */
  apply(entries: readonly FirewallEntry[]): Promise<ApplyResult>;
  /**
   * Optional: start reading the owned objects' current state now (read-only),
   * for an apply that follows within seconds. The cycle calls it before its API
   * calls, so the kernel dump overlaps the network instead of following it. An
   * apply that finds the read stale (it fails on it) reads again and retries
   * once; a read older than a few seconds is not used at all.
   */
  prefetch?(): void;
  /** The CIDRs the kernel holds now in the owned set (canonical text, sorted). */
  list(): Promise<string[]>;
  /** Remove every object the agent owns, and nothing else. */
  flush(): Promise<void>;
}
