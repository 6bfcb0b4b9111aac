import type { Logger } from 'pino';
import type { Cidr } from '../net/ipv4.js';
import type { Direction, Side } from './direction.js';
import type { FirewallEntries } from './entry-columns.js';
import type { CommandRunner } from '../exec/runner.js';

/**
 * The firewall plugin interface: everything code outside src/firewall/ may ask
 * of a backend. Each backend (nft/, ipset/, xtables/, dry-run.ts) owns its
 * commands, its text format, its counters and its health read; callers only
 * see what is declared here.
 */

export type PluginName = 'ipset' | 'nftables' | 'iptables' | 'dry-run';


/** Names of the objects the agent owns. Validated at config load. */
export interface OwnedNames {
  /** ipset set name and nft set name (default `wcf-blocklist`). */
  readonly setName: string;
  /** iptables chain (default `WCF-AGENT`). */
  readonly chainName: string;
  /** nft table in family inet (default `wcf_agent`). */
  readonly tableName: string;
}


export interface PluginOptions {
  readonly names: OwnedNames;
  /** Built-in chains to hook the agent's chain into (iptables/ipset); default INPUT, FORWARD (+DOCKER-USER if present). */
  readonly hookChains: readonly string[];
  readonly action: 'DROP' | 'REJECT';
  /** Which side of the traffic is matched: the source inbound, the destination outbound, or both (the default). */
  readonly direction?: Direction;
  /** Log blocked packets (rate-limited) before the action. */
  readonly logBlocked: boolean;
  /** Where packets are dropped (config drop_hook): before connection tracking, or in the filter stage; default from the action. */
  readonly dropHook?: 'prerouting' | 'filter';
  readonly logger: Logger;
  /** Where commands run; tests pass one that prefixes `ip netns exec NS`. */
  readonly runner?: CommandRunner;
  /** dry-run only: the file the rendered ruleset is written to. */
  readonly dryRunOutput?: string;
  /** dry-run only: which syntax to render (`ipset` restore or `nft` script). */
  readonly dryRunFormat?: 'ipset' | 'nft';
  /** This agent's instance id (agent/state/instance-id.ts), written into the marker of what it creates. */
  readonly instance?: string;
  /** The clock (epoch ms) the backend times its own record by; tests move it. */
  readonly now?: () => number;
}

/** What one apply is sized for; comes with each apply because the server may change it between cycles. */
export interface ApplyOptions {
  /**
   * The maximum_rules in force (the server's value, else the local one): the
   * most entries a selection can hold. Sets with a fixed size are sized for
   * it (with headroom), so they are rebuilt only when this changes.
   */
  readonly capacity: number;
  /**
   * The agent's state records an earlier apply with this backend. Objects
   * found missing are then repairs (someone removed them: a warning), not a
   * first install (an info line), even in a process that has not applied yet.
   */
  readonly appliedBefore?: boolean;
  /** The caller logs what was repaired itself (the watcher's one line per repair); the plugin then does not. */
  readonly callerLogsRepairs?: boolean;
  /**
   * What the kernel is believed to hold: the last applied set as of now (a restore, a
   * re-assertion, a watcher's repair; the entries to apply may be fewer, the protected set having
   * taken some out, or other, with the local overrides). A backend that has no record of its own
   * yet (a new process) may check that the kernel holds these instead of reading its sets back,
   * then write only the difference to the entries.
   */
  readonly held?: FirewallEntries;
}

export interface ApplyResult {
  readonly added: number;
  readonly removed: number;
  /** Entries whose timeout was refreshed. */
  readonly updated: number;
  /** `full` = rebuilt and swapped, `delta` = add/del in place. */
  readonly mode: 'full' | 'delta' | 'none';
  /** Things the plugin found missing and re-created this cycle (self-healing); the plugin has logged them. */
  readonly repaired: readonly string[];
  /** The objects this apply left in the kernel marked as the agent's (recorded in the state). */
  readonly owned?: readonly string[];
  /**
   * The agent's objects were laid out by this agent with other settings or by another version
   * (described), and were laid out again: not damage, so not in `repaired`.
   */
  readonly relaid?: string;
  /**
   * The objects were built anew although they were there (why): every entry was written, so
   * `added` counts what was written, not what the kernel lacked.
   */
  readonly rebuilt?: string;
}

/** Packets and bytes dropped (or rejected) by the agent's own rules since they were created. */
export interface DropCounters {
  packets: number;
  bytes: number;
}

/**
 * Packets and bytes the kernel blocked for one address on one side, since
 * the kernel last (re-)created its record (see docs/firewall.md for what resets it).
 * `ip` is the address the packets carried (nft, ipset) or the entry whose
 * rule matched (iptables): the caller maps it to the indicator covering it.
 */
export interface HitCounter {
  readonly ip: string;
  readonly side: Side;
  readonly packets: number;
  readonly bytes: number;
}

/** One object the agent owns, as found in the kernel (or the dry-run file). */
export interface OwnedObject {
  /** What it is, for people: `nft table inet wcf_agent`, `ipset wcf-blocklist`. */
  readonly what: string;
  /** `foreign`: an object under the agent's name that the agent did not create (it is never touched). */
  readonly state: 'present' | 'absent' | 'unreadable' | 'foreign';
  /** Why it could not be read (state `unreadable`), or why it is not the agent's (`foreign`). */
  readonly error?: string;
}

export interface FirewallPlugin {
  readonly name: PluginName;
  /**
   * Make the kernel hold exactly `entries` (already selected, capped). Atomic:
   * on failure the previously applied set stays in place and a FirewallError
   * is thrown. Creates and repairs owned objects as needed. This is also the
   * entry point for re-asserting a last applied set (start-up restore, or a
   * watcher between cycles): the same checks and the same writes. Entries
   * come as columns (the cycle's million) or as a list (small callers).
   */
  apply(entries: FirewallEntries, options: ApplyOptions): Promise<ApplyResult>;
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
  /**
   * Optional, for backends with kernel timeouts: the owned set's CIDRs, each
   * with the seconds the kernel still keeps it (undefined = no timeout).
   * Read-only (what `explain` shows).
   */
  listTimeouts?(): Promise<ReadonlyMap<string, number | undefined>>;
  /** Remove every object the agent owns (marked as its own), and nothing else: a foreign object under its name is left, with a warning. */
  flush(): Promise<void>;
  /** Drop counters of the agent's own rules. Read-only; absent objects count as zero. */
  readCounters(): Promise<DropCounters>;
  /** Per-address hits on each side, only for addresses that were hit. Read-only; absent objects give none. */
  readHits(): Promise<HitCounter[]>;
  /** The agent's objects (hooks included) and whether each exists and is the agent's. Read-only. */
  objects(): Promise<OwnedObject[]>;
  /**
   * Optional, for the watcher between cycles: a cheap read-only look at the
   * owned objects (structure, rules, hooks and the set header, never the whole
   * set), answering what is missing or altered, with the same wording as an
   * apply's repairs. Absent for dry-run (nothing to watch).
   */
  check?(): Promise<WatchCheck>;
  /**
   * Optional, for backends that trust what they last applied instead of
   * reading it back (nftables): the owned objects may have changed in a way
   * only a read can tell, so the next apply reads the kernel.
   */
  distrust?(why: string): void;
  /**
   * Optional: whether the kernel still holds every entry of `entries()` (the
   * last applied set as of now), asked without listing a big set (nftables:
   * check mode, see nft/verify.ts; ipset: the entry count). Read-only in the
   * kernel; a backend that keeps a record of what it wrote (nftables) checks
   * that instead (the entries are then never made: a million of them are
   * 13 MB at each verification) and notes what is missing, so that the next
   * apply puts back exactly that.
   */
  verify?(entries: () => FirewallEntries): Promise<EntryCheck>;
  /**
   * Optional, for backends whose whole listing is slow at scale (nftables): the
   * owned entries overlapping `query`, read without listing the whole set.
   * `hosts`: single addresses to look for when the query is wider than a /24
   * (the caller's candidates, e.g. from the applied record); without them a
   * wide query reads the whole set. Timeouts are given where the read tells them.
   */
  lookup?(query: Cidr, hosts?: readonly number[]): Promise<Array<{ cidr: string; timeoutSeconds: number | undefined }>>;
}

/** What a verification of the entries found (see FirewallPlugin.verify). */
export interface EntryCheck {
  /** Entries looked for (those not about to expire). */
  readonly checked: number;
  /**
   * Entries the kernel may lack: 0 = all held. nftables counts the addresses of each batch the
   * kernel refused (at least one of each is missing) plus the missing networks; ipset what its
   * entry count lacks.
   */
  readonly missing: number;
  /** Entries the kernel holds that the agent did not apply, where the backend can tell. */
  readonly extra: number;
  /** How long the check took. */
  readonly ms: number;
}

/** What a watcher's cheap check found. */
export interface WatchCheck {
  /** Missing or altered objects, as an apply would name its repairs; empty = intact. */
  readonly missing: string[];
  /** Entries in the set according to its header, where the backend can tell without listing them. */
  readonly entries?: number;
}
