import { DnsStateStore } from '../agent/state/url-feed-state.js';
import type { AgentConfig } from '../config/load.js';
import type { Logger } from '../log.js';
import { isoTime } from './format.js';

/** The URL feed's part of `status --json` (null when url_feed is off). */
export function dnsStatus(config: AgentConfig, logger: Logger) {
  if (!config.url_feed) return null;
  const s = new DnsStateStore(config.state_dir, logger).small;
  const a = s.applied ?? s.dryRunApplied;
  return {
    plugin: a?.plugin ?? null,
    applied: a?.names ?? 0,
    by_reason: a?.byReason ?? { manual: 0, score: 0 },
    applied_at: a?.ts ?? null,
    skipped: s.lastSelection?.skipped ?? null,
    // Selected, but someone else's data at the resolver holds them (explain NAME says what).
    left_alone: s.leftAlone?.count ?? 0,
    hosts: s.lastSelection?.hosts ?? null,
    url_addresses: s.lastSelection?.addresses ?? null,
    cursor: s.cursor ?? null,
    last_full_pull: s.lastFullPullAt ?? null,
  };
}

/** `status` rows for names. */
export function dnsStatusRows(d: ReturnType<typeof dnsStatus>): string[][] {
  if (!d) return [];
  return [
    ['names blocked', `${d.applied} (${d.by_reason.manual} manual, ${d.by_reason.score} score) on ${d.plugin ?? '-'}, ${isoTime(d.applied_at)}`],
    ...(d.left_alone ? [['names left alone', `${d.left_alone}: someone else's data at the resolver holds them (explain NAME says what)`]] : []),
    ['URL feed', `${d.hosts ?? 0} hosts, last full pull ${isoTime(d.last_full_pull)}`],
  ];
}
