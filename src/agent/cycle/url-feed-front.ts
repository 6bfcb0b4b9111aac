import type { AgentConfig } from '../../config/load.js';
import type { Settings } from '../../config/server.js';
import type { ApiClient } from '../../api/client.js';
import type { Logger } from '../../log.js';
import type { Scoring } from '../../score/decay.js';
import type { DnsPlan, DnsStepRecord, UrlPullStarted } from './url-feed/step.js';

export type { DnsPlan, DnsStepRecord, UrlPullStarted };

/**
 * The cycle's and the daemon's way into the URL feed. Its code (the resolver backends, the
 * URL cache, the public suffix list) is loaded only when `url_feed` is on: most hosts never
 * turn it on, and loading it costs a daemon a few MB resident for nothing. Each step is a
 * no-op when the feed is off, exactly as in url-feed/step.ts.
 */
const dnsCycle = () => import('./url-feed/step.js');

/** Start pulling the URL feed beside the IPv4 pulls (see url-feed/step.ts); undefined when `url_feed` is off. */
export function startUrlPull(o: { config: AgentConfig; client: ApiClient; logger: Logger; now: number; useCache: boolean }): UrlPullStarted | undefined {
  if (!o.config.url_feed) return undefined;
  const result = dnsCycle().then((m) => m.startUrlPull(o)!.result);
  result.catch(() => undefined); // awaited by finishDnsPlan; not unhandled if the IPv4 pull fails first
  return { result };
}

/** Select the names once the scoring is known; undefined when nothing was pulled. */
export async function finishDnsPlan(started: UrlPullStarted | undefined, o: { config: AgentConfig; logger: Logger; settings: Settings; scoring: Scoring; now: number }): Promise<DnsPlan | undefined> {
  if (!started) return undefined;
  return (await dnsCycle()).finishDnsPlan(started, o);
}

/** The DNS part of a cycle, after the firewall's (see url-feed/step.ts); undefined without a plan. */
export async function applyDnsStep(
  o: { config: AgentConfig; logger: Logger; dryRun: boolean; force?: boolean; now: number },
  plan: DnsPlan | undefined,
  running: boolean,
): Promise<DnsStepRecord | undefined> {
  if (!plan) return undefined;
  return (await dnsCycle()).applyDnsStep(o, plan, running);
}

/** `flush`: remove the agent's names from the resolver (when `url_feed` is on), and nothing else. */
export async function flushDns(o: { config: AgentConfig; logger: Logger; dryRun: boolean; now: number }): Promise<string | undefined> {
  if (!o.config.url_feed) return undefined;
  return (await dnsCycle()).flushDns(o);
}
