import { classifyName, selfAndParents } from '../feed/host.js';
import type { UrlCache } from '../feed/url-cache.js';
import type { Scoring } from '../score/decay.js';
import type { DomainPolicy, KeptBy } from './domain-policy.js';
import type { DomainEntry, DomainSelection, DomainSkip } from './domains.js';

/**
 * The verdict for one name, in the selection's own words: `manual` / `score` (blocked),
 * `covered` (a blocked parent covers it), a skip reason (`allowlist`, `reverse_zone`,
 * `special_use`, `cluster_domain`, `search_domain`, `public_suffix`, `shared_platform`,
 * `whitelist`, `threshold`, `cap`), `not_in_feed`, or `ipv4` (an address: the firewall's
 * business) / `invalid`.
 */
export type NameVerdictWord = 'manual' | 'score' | 'covered' | DomainSkip | 'not_in_feed' | 'ipv4' | 'invalid';

export interface NameVerdict {
  name: string;
  verdict: NameVerdictWord;
  blocked: boolean;
  /** The blocked entry that decides (itself, or the parent that covers it). */
  entry?: DomainEntry | undefined;
  /** URLs of the feed on this exact host. */
  urls: number;
  /** Its best URL's decayed score now (null: not in the feed). */
  score: number | null;
  /** The never-block rule that keeps it, and the name that rule protects. */
  keptBy?: KeptBy | undefined;
}

export interface ExplainInput {
  selection: DomainSelection;
  urls: UrlCache | undefined;
  policy: DomainPolicy;
  scoring: Scoring;
  now: number;
  threshold: number;
}

export function explainName(host: string, o: ExplainInput): NameVerdict {
  const h = classifyName(host);
  if (h.kind === 'ipv4') return { name: host, verdict: 'ipv4', blocked: false, urls: 0, score: null };
  if (h.kind === 'invalid') return { name: host, verdict: 'invalid', blocked: false, urls: 0, score: null };
  const name = h.name;
  const id = o.urls?.lookupHost(name) ?? -1;
  let urls = 0;
  let whitelisted = false;
  let blacklisted = false;
  let best: number | null = null;
  if (o.urls && id >= 0) {
    const { hostOf, decisionOf, scoreOf, tsOf } = o.urls.columns();
    for (let i = 0; i < hostOf.length; i++) {
      if (hostOf[i] !== id) continue;
      urls++;
      if (decisionOf[i] === 0) whitelisted = true;
      if (decisionOf[i] === 1) blacklisted = true;
      const s = o.scoring.score(scoreOf[i]!, o.now - tsOf[i]!);
      if (best === null || s > best) best = s;
    }
  }
  const at = { urls, score: best };
  const byName = new Map(o.selection.domains.map((d) => [d.name, d]));
  const own = byName.get(name);
  if (own) return { name, verdict: own.reason, blocked: true, entry: own, ...at };
  for (const p of selfAndParents(name)) {
    const e = byName.get(p);
    if (e) return { name, verdict: 'covered', blocked: true, entry: e, ...at };
  }
  const kept = o.policy.keptBy(name);
  if (h.kind === 'public_suffix') return { name, verdict: 'public_suffix', blocked: false, ...at, keptBy: { rule: 'public_suffix', zone: name, source: 'Public Suffix List' } };
  if (kept) return { name, verdict: kept.rule, blocked: false, ...at, keptBy: kept };
  if (urls === 0) return { name, verdict: 'not_in_feed', blocked: false, ...at };
  if (whitelisted) return { name, verdict: 'whitelist', blocked: false, ...at };
  // In the feed, allowed to be blocked, yet not selected: over the cap if it qualified, else below the threshold.
  const qualified = blacklisted || (best !== null && best >= o.threshold && best > 0);
  return { name, verdict: qualified ? 'cap' : 'threshold', blocked: false, ...at };
}
