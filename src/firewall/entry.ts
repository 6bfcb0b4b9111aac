import type { Cidr } from '../net/ipv4.js';

/** One address or network to block. */
export interface FirewallEntry {
  /** Parsed once at the edge (selection or the applied-set file); the plugins never re-parse text. */
  readonly cidr: Cidr;
  /**
   * Seconds until the kernel removes the entry by itself (the decayed score
   * crosses the threshold then). Undefined = no timeout (manual blocks).
   */
  readonly timeoutSeconds?: number | undefined;
}
