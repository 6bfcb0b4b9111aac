import { FirewallError } from '../errors.js';
import { CidrIndex } from '../net/cidr-index.js';
import { compareCidr, toCidr, type Cidr } from '../net/ipv4.js';
import type { FirewallEntry } from './plugin.js';

/**
 * Entries as every backend hands them to the kernel: validated, de-duplicated,
 * with whole-second timeouts. Pure.
 */


/**
 * Largest timeout used for the kernel, in seconds. ipset refuses more than
 * 2147483 s (UINT_MAX / 1000: the kernel keeps timeouts in milliseconds in 32
 * bits); nft accepts a bit more but the same clamp keeps both plugins alike.
 * Clamping is safe: the agent recomputes timeouts and re-applies them every
 * cycle, so an entry that should live longer is refreshed long before 24.8
 * days have passed.
 */
export const MAX_KERNEL_TIMEOUT_S = 2_147_483;

/** An entry ready for the kernel: parsed CIDR, timeout in whole seconds (undefined = permanent). */
export interface KernelEntry {
  readonly cidr: Cidr;
  readonly timeout: number | undefined;
}

/**
 * Seconds for the kernel: rounded up, at least 1, at most MAX_KERNEL_TIMEOUT_S.
 * Never 0: for ipset `timeout 0` means "permanent", the opposite of "about to
 * expire".
 */
export function kernelTimeout(seconds: number | undefined): number | undefined {
  if (seconds === undefined) return undefined;
  if (Number.isNaN(seconds)) throw new FirewallError('entry timeout is NaN');
  if (seconds >= MAX_KERNEL_TIMEOUT_S) return MAX_KERNEL_TIMEOUT_S;
  return seconds <= 1 ? 1 : Math.ceil(seconds);
}

/**
 * De-duplicate entries (input order kept) and turn their timeouts into
 * kernel seconds. For duplicates the longest timeout wins (permanent beats
 * any timeout). The CIDRs were parsed at the edge, so only canonical text can
 * reach a restore script; a NaN timeout throws FirewallError before any
 * command runs.
 */
export function normalizeEntries(entries: readonly FirewallEntry[]): KernelEntry[] {
  const out: KernelEntry[] = [];
  const index = new CidrIndex(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const cidr = e.cidr;
    let timeout: number | undefined;
    try {
      timeout = kernelTimeout(e.timeoutSeconds);
    } catch {
      throw new FirewallError(`refusing to apply entry ${i} (${cidr.text}): timeout is not a number`);
    }
    const prev = index.add(cidr.start, cidr.prefix, out.length);
    if (prev === -1) out.push({ cidr, timeout });
    else {
      const p = out[prev]!;
      if (p.timeout !== undefined && (timeout === undefined || timeout > p.timeout)) out[prev] = { cidr: p.cidr, timeout };
    }
  }
  return out;
}

/** Canonical CIDR texts, sorted by address then prefix (wider first). */
export function sortCidrTexts(texts: Iterable<string>): string[] {
  const cidrs: Cidr[] = [];
  for (const t of texts) {
    const c = toCidr(t);
    if (c) cidrs.push(c);
  }
  cidrs.sort(compareCidr);
  return cidrs.map((c) => c.text);
}

/**
 * Seconds of kernel timeout for an entry that expires at `expiresAt` (epoch
 * seconds; null = never), counted from `now`: floor, so it leaves no later
 * than its expiry, and at least 1.
 */
export function timeoutUntil(expiresAt: number | null, now: number): number | undefined {
  return expiresAt === null ? undefined : Math.max(1, Math.floor(expiresAt - now));
}
