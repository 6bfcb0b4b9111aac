import { describe, expect, it } from 'vitest';
import type { CycleOutcome } from '../../../src/agent/cycle/types.js';
import { AgentMetrics } from '../../../src/metrics/index.js';

async function scrape(m: AgentMetrics): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await m.registry.metrics()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

describe('name metrics', () => {
  it('domains_applied and domains_skipped by reason follow the last cycle; url entries are counted', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    let s = await scrape(m);
    expect(s.get('wcf_agent_domains_applied{reason="manual"}')).toBe(0);
    expect(s.get('wcf_agent_domains_skipped{reason="public_suffix"}')).toBe(0);
    const skipped = { allowlist: 1, reverse_zone: 7, special_use: 8, cluster_domain: 9, search_domain: 10, public_suffix: 2, shared_platform: 3, whitelist: 4, threshold: 5, cap: 6 };
    const outcome = {
      record: { ts: 1, ok: true, code: 0, durationMs: 1, plugin: 'dry-run', applied: 3, byReason: { manual: 1, url: 2, score: 0 }, skipped: { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 }, fullPull: true, running: true },
      settings: { maximum_rules: 10, score_threshold: 1, sync_time: 15, running: true, version: null },
      reported: true,
      plan: { dns: { selection: { skipped } } },
      dns: { plugin: 'unbound', applied: 7, byReason: { manual: 3, score: 4 } },
    } as unknown as CycleOutcome;
    m.observeCycle(outcome);
    s = await scrape(m);
    expect(s.get('wcf_agent_domains_applied{reason="manual"}')).toBe(3);
    expect(s.get('wcf_agent_domains_applied{reason="score"}')).toBe(4);
    expect(s.get('wcf_agent_domains_skipped{reason="shared_platform"}')).toBe(3);
    expect(s.get('wcf_agent_domains_skipped{reason="cap"}')).toBe(6);
    expect(s.get('wcf_agent_domains_skipped{reason="special_use"}')).toBe(8);
    expect(s.get('wcf_agent_entries_applied{reason="url"}')).toBe(2);
  });
});
