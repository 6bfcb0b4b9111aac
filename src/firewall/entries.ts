import { FirewallError } from '../errors.js';
import { CidrIndex } from '../net/cidr-index.js';
import { compareCidr, toCidr, type Cidr } from '../net/ipv4.js';
import { asColumns, EntryColumns, type FirewallEntries } from './entry-columns.js';

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
 * kernel seconds (NaN = permanent). For duplicates the longest timeout wins
 * (permanent beats any timeout). The CIDRs were parsed at the edge, so only
 * canonical networks can reach a restore script; a NaN timeout throws
 * FirewallError before any command runs. Columns in, columns out: no object
 * per entry. Input that is already so (a cycle's selection: distinct, whole
 * seconds) is answered as it is, not copied; it is never written to.
 */
export function normalizeEntries(input: FirewallEntries): EntryColumns {
  const entries = asColumns(input);
  const n = entries.length;
  const index = new CidrIndex(n);
  const { starts, prefixes, timeouts } = entries;
  // Made at the first entry that changes anything, from the entries before it (unchanged so far).
  let out: EntryColumns | undefined;
  for (let i = 0; i < n; i++) {
    const start = starts[i]!;
    const prefix = prefixes[i]!;
    const t = timeouts[i]!;
    const timeout = Number.isNaN(t) ? NaN : kernelSeconds(t);
    const prev = index.add(start, prefix, out === undefined ? i : out.length);
    if (out === undefined) {
      if (prev === -1 && (timeout === t || Number.isNaN(t))) continue;
      out = new EntryColumns(n);
      for (let k = 0; k < i; k++) out.push(starts[k]!, prefixes[k]!, entries.timeoutAt(k));
    }
    if (prev === -1) out.push(start, prefix, Number.isNaN(timeout) ? undefined : timeout);
    else {
      const p = out.timeouts[prev]!;
      if (!Number.isNaN(p) && (Number.isNaN(timeout) || timeout > p)) out.timeouts[prev] = timeout;
    }
  }
  index.release();
  return out ?? entries;
}

/** kernelTimeout for a number (not NaN: EntryColumns refuses NaN timeouts when it is built). */
function kernelSeconds(seconds: number): number {
  if (seconds >= MAX_KERNEL_TIMEOUT_S) return MAX_KERNEL_TIMEOUT_S;
  return seconds <= 1 ? 1 : Math.ceil(seconds);
}

/** Kernel entries as objects (the backends whose sets are small: iptables, the nft overlap split). */
export function kernelList(cols: EntryColumns): KernelEntry[] {
  const out: KernelEntry[] = [];
  for (let i = 0; i < cols.length; i++) out.push({ cidr: cols.cidr(i), timeout: cols.timeoutAt(i) });
  return out;
}

/** Kernel entries as columns. */
export function kernelColumns(list: Iterable<KernelEntry>, count = 16): EntryColumns {
  const out = new EntryColumns(count);
  for (const e of list) out.push(e.cidr.start, e.cidr.prefix, e.timeout);
  return out;
}

/** A kernel listing (CIDR text -> remaining seconds) as columns; entries that are not canonical CIDRs are left out. */
export function listingColumns(listing: ReadonlyMap<string, number | undefined>): EntryColumns {
  const out = new EntryColumns(listing.size);
  for (const [text, t] of listing) {
    const c = toCidr(text);
    if (c) out.push(c.start, c.prefix, t);
  }
  return out;
}

/** Columns as CIDR text -> seconds (undefined = none): what listTimeouts answers. */
export function columnsToMap(cols: EntryColumns): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  for (let i = 0; i < cols.length; i++) out.set(cols.text(i), cols.timeoutAt(i));
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

/** Entries this close to their timeout may be gone from the kernel already: a verification does not look for them. */
export const EXPIRY_SLACK_S = 5;

/** The entries of `c` with more than EXPIRY_SLACK_S seconds left, `ageS` seconds after their timeouts were taken (permanent ones included). */
export function lastingEntries(c: EntryColumns, ageS = 0): EntryColumns {
  return c.filter((i) => {
    const t = c.timeouts[i]!;
    return Number.isNaN(t) || t - ageS > EXPIRY_SLACK_S;
  });
}
