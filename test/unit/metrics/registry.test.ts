import { afterEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import type { CycleOutcome } from '../../../src/agent/cycle/types.js';
import type { CycleRecord } from '../../../src/agent/state/store.js';
import { AgentMetrics, instrumentPlugin } from '../../../src/metrics/index.js';
import { parseListen } from '../../../src/metrics/listen.js';
import { startMetricsServer, type MetricsServer } from '../../../src/metrics/server.js';
import type { FirewallPlugin } from '../../../src/firewall/plugin.js';
import { toCidr } from '../../../src/net/ipv4.js';

const silent = pino({ level: 'silent' });

function outcome(over: Partial<CycleRecord> = {}, withPlan = true): CycleOutcome {
  const record: CycleRecord = {
    ts: 1_800_000_000,
    ok: true,
    code: 0,
    durationMs: 1500,
    plugin: 'dry-run',
    applied: 12,
    byReason: { manual: 2, score: 10, local: 0 },
    skipped: { allowlist: 1, too_wide: 2, whitelist: 3, threshold: 400, cap: 5 },
    fullPull: true,
    running: true,
    ...over,
  };
  const settings = { maximum_rules: 10_000, score_threshold: 0, sync_time: 5, running: true, version: null };
  return { record, settings, reported: true, ...(withPlan ? { plan: {} as CycleOutcome['plan'] } : {}) };
}

/** `name{labels} value` lines of the exposition text as a map. */
async function scrape(m: AgentMetrics): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await m.registry.metrics()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

describe('AgentMetrics', () => {
  it('starts with every series at zero, in its own registry', async () => {
    const s = await scrape(new AgentMetrics({ defaultMetrics: false }));
    expect(s.get('wcf_agent_cycles_total{result="ok"}')).toBe(0);
    expect(s.get('wcf_agent_cycles_total{result="error"}')).toBe(0);
    expect(s.get('wcf_agent_entries_skipped{reason="too_wide"}')).toBe(0);
    expect(s.get('wcf_agent_api_errors_total{class="WCF_ERR_API_AUTH"}')).toBe(0);
    expect(s.get('wcf_agent_dropped_packets_total')).toBe(0);
    expect(s.get('wcf_agent_last_success_timestamp_seconds')).toBe(0);
    // Two instances do not collide (no global registry).
    expect(() => new AgentMetrics({ defaultMetrics: false })).not.toThrow();
  });

  it('records cycles, selections and the last success', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.observeCycle(outcome());
    m.observeCycle(outcome({ ok: false, ts: 1_800_000_100, code: 20, byReason: { manual: 2, score: 10, local: 0 } }, false));
    const s = await scrape(m);
    expect(s.get('wcf_agent_cycles_total{result="ok"}')).toBe(1);
    expect(s.get('wcf_agent_cycles_total{result="error"}')).toBe(1);
    expect(s.get('wcf_agent_cycle_duration_seconds_count')).toBe(2);
    expect(s.get('wcf_agent_cycle_duration_seconds_sum')).toBe(3);
    expect(s.get('wcf_agent_entries_applied{reason="score"}')).toBe(10);
    expect(s.get('wcf_agent_entries_applied{reason="manual"}')).toBe(2);
    // The failed cycle had no selection: the skipped numbers of the last one stay.
    expect(s.get('wcf_agent_entries_skipped{reason="threshold"}')).toBe(400);
    expect(s.get('wcf_agent_entries_skipped{reason="cap"}')).toBe(5);
    expect(s.get('wcf_agent_last_success_timestamp_seconds')).toBe(1_800_000_000);
  });

  it('exposes what alerting rules compare with: maximum_rules, the sync interval in seconds, the last cycle code', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.observeCycle(outcome({ ok: false, code: 31 }));
    let s = await scrape(m);
    expect(s.get('wcf_agent_maximum_rules')).toBe(10_000);
    expect(s.get('wcf_agent_sync_interval_seconds')).toBe(300); // sync_time 5 minutes
    expect(s.get('wcf_agent_last_cycle_code')).toBe(31);
    // The daemon's minute, shortened in tests, is the interval's unit; later cycles keep it.
    m.observeSettings({ maximum_rules: 50, sync_time: 3 }, 1000);
    m.observeCycle(outcome());
    s = await scrape(m);
    expect(s.get('wcf_agent_sync_interval_seconds')).toBe(5);
    expect(s.get('wcf_agent_maximum_rules')).toBe(10_000);
    expect(s.get('wcf_agent_last_cycle_code')).toBe(0);
    m.setLastCycleCode(undefined);
    expect((await scrape(m)).get('wcf_agent_last_cycle_code')).toBe(0);
  });

  it('ready is the readiness probe asked at scrape time: 1 when it answers ok, 0 otherwise or when it fails', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    expect((await scrape(m)).get('wcf_agent_ready')).toBe(0);
    let answer: boolean | Error = true;
    let asked = 0;
    m.setReadiness(async () => {
      asked++;
      if (answer instanceof Error) throw answer;
      return answer;
    });
    expect((await scrape(m)).get('wcf_agent_ready')).toBe(1);
    answer = false;
    expect((await scrape(m)).get('wcf_agent_ready')).toBe(0);
    answer = true;
    expect((await scrape(m)).get('wcf_agent_ready')).toBe(1);
    answer = new Error('nft: hung');
    expect((await scrape(m)).get('wcf_agent_ready')).toBe(0);
    expect(asked).toBe(4);
  });

  it('counts the watcher’s repairs per object, and the instrumented plugin keeps the cheap check', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.observeRepair(['nft table inet wcf_agent']);
    m.observeRepair(['nft table inet wcf_agent', 'nft chain input']);
    const s = await scrape(m);
    expect(s.get('wcf_agent_repairs_total{object="nft table inet wcf_agent"}')).toBe(2);
    expect(s.get('wcf_agent_repairs_total{object="nft chain input"}')).toBe(1);
    const plugin = {
      name: 'nftables',
      check: () => Promise.resolve({ missing: ['nft chain input'] }),
    } as unknown as FirewallPlugin;
    expect(await instrumentPlugin(plugin, m).check!()).toEqual({ missing: ['nft chain input'] });
  });

  it('records API attempts by route and method, errors by class', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    m.observeRequest({ route: '/ips', method: 'GET', status: 200, durationMs: 20, sentBytes: 0, receivedBytes: 5000 });
    m.observeRequest({ route: '/ips', method: 'GET', errorCode: 'WCF_ERR_API_UNREACHABLE', durationMs: 5, sentBytes: 0, receivedBytes: 0 });
    m.observeRequest({ route: '/feedback', method: 'POST', status: 403, errorCode: 'WCF_ERR_API_AUTH', durationMs: 3, sentBytes: 700, receivedBytes: 20 });
    m.observeRequest({ route: '/ips', method: 'GET', status: 304, durationMs: 20, sentBytes: 0, receivedBytes: 0 });
    const s = await scrape(m);
    expect(s.get('wcf_agent_api_received_bytes_total{route="/ips"}')).toBe(5000);
    expect(s.get('wcf_agent_api_received_bytes_total{route="/feedback"}')).toBe(20);
    expect(s.get('wcf_agent_api_sent_bytes_total{route="/feedback"}')).toBe(700);
    expect(s.get('wcf_agent_api_not_modified_total{route="/ips"}')).toBe(1);
    expect(s.get('wcf_agent_api_request_duration_seconds_count{route="/ips",method="GET"}')).toBe(3);
    expect(s.get('wcf_agent_api_request_duration_seconds_count{route="/feedback",method="POST"}')).toBe(1);
    expect(s.get('wcf_agent_api_errors_total{class="WCF_ERR_API_UNREACHABLE"}')).toBe(1);
    expect(s.get('wcf_agent_api_errors_total{class="WCF_ERR_API_AUTH"}')).toBe(1);
  });

  it('times applies through the instrumented plugin, failures included', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    let fail = false;
    const inner: FirewallPlugin = {
      name: 'dry-run',
      apply: async () => {
        if (fail) throw new Error('boom');
        return { added: 1, removed: 0, updated: 0, mode: 'full', repaired: [] };
      },
      list: async () => ['192.0.2.1'],
      flush: async () => undefined,
      readCounters: async () => ({ packets: 0, bytes: 0 }),
      readHits: async () => [],
      objects: async () => [],
    };
    const p = instrumentPlugin(inner, m);
    expect(p.name).toBe('dry-run');
    await p.apply([{ cidr: toCidr('192.0.2.1')! }], { capacity: 10 });
    fail = true;
    await expect(p.apply([], { capacity: 10 })).rejects.toThrow('boom');
    expect(await p.list()).toEqual(['192.0.2.1']);
    expect((await scrape(m)).get('wcf_agent_firewall_apply_duration_seconds_count')).toBe(2);
  });

  it('reads the drop counters at scrape time; a failing read keeps the last values and never breaks the scrape', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    let next: { packets: number; bytes: number } | Error = { packets: 5, bytes: 300 };
    const errors: unknown[] = [];
    m.setCounterReader(async () => {
      if (next instanceof Error) throw next;
      return next;
    }, (e) => errors.push(e));
    let s = await scrape(m);
    expect(s.get('wcf_agent_dropped_packets_total')).toBe(5);
    expect(s.get('wcf_agent_dropped_bytes_total')).toBe(300);
    expect(s.get('wcf_agent_firewall_counters_read_ok')).toBe(1);
    next = new Error('nft: Operation not permitted');
    // Within the per-scrape read cache (a second): the reader is not asked again.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      vi.setSystemTime(Date.now() + 500);
      s = await scrape(m);
      expect(s.get('wcf_agent_firewall_counters_read_ok')).toBe(1);
      expect(errors).toHaveLength(0);
      vi.setSystemTime(Date.now() + 1000); // past it
      s = await scrape(m);
    } finally {
      vi.useRealTimers();
    }
    expect(s.get('wcf_agent_dropped_packets_total')).toBe(5);
    expect(s.get('wcf_agent_firewall_counters_read_ok')).toBe(0);
    expect(errors).toHaveLength(1);
  });
});

describe('metrics HTTP server', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves GET /metrics on the bound port, 404 elsewhere, 405 for other methods', async () => {
    const m = new AgentMetrics();
    server = await startMetricsServer(parseListen('127.0.0.1:0'), m.registry, silent);
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const r = await fetch(server.url);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await r.text();
    expect(text).toMatch(/^wcf_agent_cycles_total\{result="ok"\} 0$/m);
    expect(text).toMatch(/^wcf_agent_process_resident_memory_bytes \d+/m);
    expect(text).toMatch(/^wcf_agent_nodejs_heap_size_used_bytes \d+/m);
    // Not a heap: prom-client's VmData (reserved address space), removed as misleading.
    expect(text).not.toMatch(/process_heap_bytes/);
    expect((await fetch(server.url.replace('/metrics', '/'))).status).toBe(404);
    expect((await fetch(server.url, { method: 'POST' })).status).toBe(405);
  });

  it('fails to start on a port in use (the caller logs and carries on)', async () => {
    const m = new AgentMetrics({ defaultMetrics: false });
    server = await startMetricsServer(parseListen('127.0.0.1:0'), m.registry, silent);
    const port = Number(new URL(server.url).port);
    await expect(startMetricsServer(parseListen(`127.0.0.1:${port}`), m.registry, silent)).rejects.toThrow(/EADDRINUSE/);
  });
});

describe('the daemon metrics at start-up, before the first cycle', () => {
  it('take the last success, the last cycle code and the settings in force from the state, sync_time in the daemon\'s minute', async () => {
    const { setupDaemonMetrics } = await import('../../../src/metrics/index.js');
    const config = { metrics_listen: '127.0.0.1:0', state_dir: '/nonexistent', maximum_rules: 10_000, score_threshold: 1, sync_time: 15 } as unknown as Parameters<typeof setupDaemonMetrics>[0];
    const plugin = { name: 'dry-run' } as unknown as FirewallPlugin;
    const parts = (small: object) => ({ config, plugin, api: { client: {} }, state: { small } }) as unknown as Parameters<NonNullable<ReturnType<typeof setupDaemonMetrics>>['instrument']>[0];
    // A restarted daemon: what the state file kept (the server's settings, a failed last cycle).
    const restarted = setupDaemonMetrics(config, silent, 2000)!;
    restarted.instrument(parts({ lastSuccessAt: 1_800_000_000, lastCycle: { code: 31 }, settings: { maximum_rules: 500, score_threshold: 2, sync_time: 3, running: true, version: null } }));
    let s = await scrape(restarted.metrics);
    expect(s.get('wcf_agent_last_success_timestamp_seconds')).toBe(1_800_000_000);
    expect(s.get('wcf_agent_last_cycle_code')).toBe(31);
    expect(s.get('wcf_agent_maximum_rules')).toBe(500);
    expect(s.get('wcf_agent_sync_interval_seconds')).toBe(6); // 3 "minutes" of 2 s
    // A first start: config.json's settings.
    const fresh = setupDaemonMetrics(config, silent)!;
    fresh.instrument(parts({}));
    s = await scrape(fresh.metrics);
    expect(s.get('wcf_agent_maximum_rules')).toBe(10_000);
    expect(s.get('wcf_agent_sync_interval_seconds')).toBe(900);
    expect(s.get('wcf_agent_last_cycle_code')).toBe(0);
  });
});
