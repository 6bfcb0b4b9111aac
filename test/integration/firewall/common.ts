import type { Logger } from 'pino';
import type { ApplyOptions, PluginOptions } from '../../../src/firewall/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { compareCidr, fromNumber, mustParseCidr, type Cidr } from '../../../src/net/ipv4.js';
import { captureLogger } from '../../netns/netns.js';

export const NAMES = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' } as const;

/** Names an administrator's own objects carry in the ownership tests (`myfw`, as a site firewall might be called). */
export const FOREIGN_NAMES = { setName: 'admin-allow', chainName: 'myfw-input', tableName: 'myfw' } as const;

/** What each apply is sized for: the local default maximum_rules. */
export const CAP: ApplyOptions = { capacity: 10_000 };

/** A CIDR written in a test. */
export function net(text: string): Cidr {
  return mustParseCidr(text, 'test entry');
}

export function options(runner: CommandRunner, overrides: Partial<PluginOptions> = {}): PluginOptions & { lines: Array<Record<string, unknown>> } {
  const { logger, lines } = captureLogger();
  return {
    names: NAMES,
    hookChains: ['INPUT', 'FORWARD'],
    action: 'DROP',
    // The backend tests check inbound rules; the direction suite (direction.ts) covers the others.
    direction: 'inbound',
    logBlocked: false,
    logger: logger as Logger,
    runner,
    ...overrides,
    lines,
  };
}

/** `n` distinct /32s in 100.64.0.0/10 (shared address space), never the lab's 198.18.0.0/15 addresses. */
export function fillers(n: number, timeoutSeconds?: number, base = 0): FirewallEntry[] {
  const out: FirewallEntry[] = [];
  for (let i = base; i < base + n; i++) {
    const v = (100 << 24) + (64 << 16) + i;
    out.push({ cidr: fromNumber(v >>> 0, 32), timeoutSeconds });
  }
  return out;
}

export function sortedCidrs(entries: readonly FirewallEntry[]): string[] {
  return entries
    .map((e) => e.cidr)
    .sort(compareCidr)
    .map((c) => c.text);
}
