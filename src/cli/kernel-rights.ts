import { readFileSync } from 'node:fs';
import type { AgentConfig } from '../config/load.js';
import { FirewallError } from '../errors.js';

/**
 * Whether this process may change the kernel's firewall, asked once, before a command does
 * anything: a user without the capability used to pull the whole feed and then fail inside the
 * firewall tool ("cache initialization failed: Operation not permitted"), with no word of what
 * was missing. The kernel stays the judge of everything else: this only refuses early what it
 * would refuse late.
 */

const CAP_NET_ADMIN = 12n;
const CAP_NET_RAW = 13n;

export const NEEDS_NET_ADMIN = 'needs root or CAP_NET_ADMIN';

/** The effective capabilities from `/proc/self/status` text; undefined when they cannot be read. */
export function effectiveCapabilities(procStatus?: string): { netAdmin: boolean; netRaw: boolean } | undefined {
  let text = procStatus;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/status', 'utf8');
    } catch {
      return undefined;
    }
  }
  const m = /^CapEff:\s*([0-9a-fA-F]+)\s*$/m.exec(text);
  if (!m) return undefined;
  const caps = BigInt(`0x${m[1]}`);
  return { netAdmin: (caps & (1n << CAP_NET_ADMIN)) !== 0n, netRaw: (caps & (1n << CAP_NET_RAW)) !== 0n };
}

/**
 * What the configured backend lacks to write the kernel (`write`, the default) or to read it
 * (`needs root or CAP_NET_ADMIN ...`), or undefined when nothing is known to be missing (the dry
 * run needs nothing; unreadable capabilities are left to the kernel).
 */
export function missingKernelRights(plugin: AgentConfig['plugin'], o: { dryRun?: boolean; write?: boolean; procStatus?: string } = {}): string | undefined {
  if (o.dryRun || plugin === 'dry-run') return undefined;
  const caps = effectiveCapabilities(o.procStatus);
  if (!caps) return undefined;
  const backend = plugin === 'auto' ? 'firewall' : plugin;
  if (!caps.netAdmin) return `${NEEDS_NET_ADMIN} (the ${backend} backend ${o.write === false ? 'reads' : 'writes'} the kernel's firewall)`;
  // iptables' set match opens a raw socket to ipset: without CAP_NET_RAW, "Can't open socket to ipset".
  if (o.write !== false && plugin === 'ipset' && !caps.netRaw) return `${NEEDS_NET_ADMIN} and CAP_NET_RAW (the ipset backend: iptables' set match opens a raw socket to ipset)`;
  return undefined;
}

/**
 * Refuse, before any network call or kernel command, a command that would write the kernel without
 * the rights to. `what`: the command, as the message starts; `hint`: what would do without them.
 */
export function requireKernelRights(config: Pick<AgentConfig, 'plugin'>, what: string, options: { dryRun?: boolean; hint?: string } = {}): void {
  const missing = missingKernelRights(config.plugin, { dryRun: options.dryRun });
  if (missing) {
    throw new FirewallError(
      `${what}: ${missing}; nothing was changed. Run it as root (sudo), or as a user given the capability (docs/daemon.md, running as a non-root user)${options.hint ? `; ${options.hint}` : ''}`,
    );
  }
}
