import { HOST_KIND, type UrlCache } from '../feed/url-cache.js';
import type { Scoring } from '../score/decay.js';
import type { DomainPolicy, DomainVeto } from './domain-policy.js';

export type DomainReason = 'manual' | 'score';
export type DomainSkip = DomainVeto | 'whitelist' | 'threshold' | 'cap';
export const DOMAIN_SKIPS: readonly DomainSkip[] = ['allowlist', 'reverse_zone', 'special_use', 'cluster_domain', 'search_domain', 'public_suffix', 'shared_platform', 'whitelist', 'threshold', 'cap'];

export interface DomainEntry {
  readonly name: string;
  /** `manual`: a blacklisted URL on the host; `score`: its best URL's decayed score. */
  readonly reason: DomainReason;
  readonly score: number;
  /** Epoch s when the best URL's score falls below the threshold; null = no expiry. */
  readonly expiresAt: number | null;
  /** URLs of the feed on this host. */
  readonly urls: number;
}

/** An IPv4-literal URL host, for the firewall selection (reason `url`). */
export interface UrlAddress {
  readonly ip: string;
  readonly score: number;
  readonly expiresAt: number | null;
}

export interface DomainSelectionInput {
  readonly now: number;
  readonly urls: UrlCache;
  readonly scoring: Scoring;
  readonly threshold: number;
  readonly maximumDomains: number;
  readonly policy: DomainPolicy;
}

export interface DomainSelection {
  readonly domains: DomainEntry[];
  readonly skipped: Record<DomainSkip, number>;
  /** IPv4-literal hosts that pass the URL rules (blacklisted, or score >= threshold; never whitelisted). */
  readonly addresses: UrlAddress[];
  /** Distinct hosts in the URL feed. */
  readonly hosts: number;
  /**
   * Per host of the URL cache (by its id): 0 selected or no URL, else why it was left out (index
   * in DOMAIN_SKIPS + 1); and its best decayed score. The change history says from these why a
   * name left the resolver.
   */
  readonly outcomes?: Uint8Array;
  readonly bestScores?: Float64Array;
}

/** Per host: the best URL by decayed score now, URL count, decision flags. */
interface HostTable {
  best: Float64Array;
  bestS: Float64Array;
  bestTs: Float64Array;
  count: Uint32Array;
  white: Uint8Array;
  black: Uint8Array;
}

function aggregate(input: DomainSelectionInput): HostTable {
  const n = input.urls.hosts.length;
  const t: HostTable = {
    best: new Float64Array(n).fill(-1),
    bestS: new Float64Array(n),
    bestTs: new Float64Array(n),
    count: new Uint32Array(n),
    white: new Uint8Array(n),
    black: new Uint8Array(n),
  };
  const { hostOf, tsOf, scoreOf, decisionOf } = input.urls.columns();
  const { scoring, now } = input;
  for (let i = 0; i < hostOf.length; i++) {
    const h = hostOf[i]!;
    t.count[h]!++;
    const d = decisionOf[i]!;
    if (d === 0) t.white[h] = 1;
    else if (d === 1) t.black[h] = 1;
    const s = scoring.score(scoreOf[i]!, now - tsOf[i]!);
    if (s > t.best[h]!) {
      t.best[h] = s;
      t.bestS[h] = scoreOf[i]!;
      t.bestTs[h] = tsOf[i]!;
    }
  }
  return t;
}

/**
 * The blocked-name set at `now`, in the contract's order of precedence:
 *  1. never names the policy protects (allowlist and the agent's own names, reverse zones, special-use
 *     names, the cluster domain, the host's search domains, public suffixes, shared platforms);
 *  2. never a host with any whitelisted URL;
 *  3. hosts of blacklisted URLs first;
 *  4. then hosts whose best decayed URL score is >= threshold, highest first, ties by name;
 *  5. all capped at maximum_domains.
 * Pure and deterministic. IPv4-literal hosts are answered apart, for the firewall.
 */
export function selectDomains(input: DomainSelectionInput): DomainSelection {
  const skipped = Object.fromEntries(DOMAIN_SKIPS.map((k) => [k, 0])) as Record<DomainSkip, number>;
  const { urls, threshold, scoring, now } = input;
  const t = aggregate(input);
  const manual: number[] = [];
  const scored: number[] = [];
  const addresses: UrlAddress[] = [];
  const outcomes = new Uint8Array(urls.hosts.length);
  const skip = (h: number, why: DomainSkip) => {
    skipped[why]++;
    outcomes[h] = DOMAIN_SKIPS.indexOf(why) + 1;
  };
  const expiry = (h: number): number | null => {
    const age = now - t.bestTs[h]!;
    const secs = scoring.secondsUntilBelow(t.bestS[h]!, Math.max(0, age), threshold);
    return secs === null ? null : now + secs + Math.max(0, -age);
  };
  for (let h = 0; h < urls.hosts.length; h++) {
    if (t.count[h] === 0) continue;
    const kind = urls.hostKind(h);
    const passes = t.black[h] === 1 || (t.best[h]! >= threshold && t.best[h]! > 0);
    if (kind === HOST_KIND.ipv4) {
      if (t.white[h] === 0 && passes) addresses.push({ ip: urls.hosts[h]!, score: t.best[h]!, expiresAt: t.black[h] ? null : expiry(h) });
      continue;
    }
    if (kind === HOST_KIND.publicSuffix) {
      skip(h, 'public_suffix');
      continue;
    }
    const veto = input.policy.veto(urls.hosts[h]!);
    if (veto) {
      skip(h, veto);
      continue;
    }
    if (t.white[h] === 1) {
      skip(h, 'whitelist');
      continue;
    }
    if (t.black[h] === 1) manual.push(h);
    else if (passes) scored.push(h);
    else skip(h, 'threshold');
  }
  const byName = (a: number, b: number) => (urls.hosts[a]! < urls.hosts[b]! ? -1 : urls.hosts[a]! > urls.hosts[b]! ? 1 : 0);
  manual.sort(byName);
  scored.sort((a, b) => t.best[b]! - t.best[a]! || byName(a, b));
  const cap = input.maximumDomains;
  const domains: DomainEntry[] = [];
  for (const h of manual) {
    if (domains.length >= cap) break;
    domains.push({ name: urls.hosts[h]!, reason: 'manual', score: t.best[h]!, expiresAt: null, urls: t.count[h]! });
  }
  for (const h of scored) {
    if (domains.length >= cap) break;
    domains.push({ name: urls.hosts[h]!, reason: 'score', score: t.best[h]!, expiresAt: expiry(h), urls: t.count[h]! });
  }
  skipped.cap = manual.length + scored.length - domains.length;
  const capCode = DOMAIN_SKIPS.indexOf('cap') + 1;
  for (const h of [...manual, ...scored].slice(cap)) outcomes[h] = capCode;
  addresses.sort((a, b) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : 0));
  return { domains, skipped, addresses, hosts: urls.hosts.length, outcomes, bestScores: t.best };
}
