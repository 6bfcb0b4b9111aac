import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig, waitFor } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { parseExposition } from '../../helpers/metrics.js';

let sim: Simulator;
const running: DaemonProcess[] = [];
beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 13, agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' } });
  // One of each skip reason the selection can meet, so every skipped gauge has a non-zero truth.
  sim.setDecision('198.51.100.1', 1); // manual block
  sim.upsertIndicator({ ip: '198.51.100.2', score: 9.9 });
  sim.setDecision('198.51.100.2', 0); // whitelisted
  sim.upsertIndicator({ ip: '127.0.0.5', score: 9.9 }); // loopback: protected
  sim.upsertIndicator({ ip: '16.0.0.0/4', score: 9.9, is_network: true }); // wider than min_prefix
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  sim.setAgentConfig(sim.agid, { sync_time: '5', maximum_rules: '300' });
});

function config(extra: Record<string, unknown> = {}) {
  return writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, metrics_listen: '127.0.0.1:0', ...extra });
}

const parse = parseExposition;

describe('metrics endpoint of `run`', () => {
  it('serves the agent metrics after a cycle, and stops with the daemon', async () => {
    const { path, dir } = config();
    // One cycle, then a minute (of 100 ms minutes: 60 s) to the next: the scrape and the
    // state file both describe that one cycle.
    sim.setAgentConfig(sim.agid, { sync_time: '600', maximum_rules: '20' }); // a small cap, so some entries are capped
    const d = new DaemonProcess(path);
    running.push(d);
    const listening = await d.waitForLog(/^metrics listening on /);
    const url = /(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(listening.msg)![1]!;
    await d.waitForLog(/^cycle done/);
    const m = await waitFor(async () => {
      const s = parse(await (await fetch(url)).text());
      return (s.get('wcf_agent_cycles_total{result="ok"}') ?? 0) >= 1 ? s : undefined;
    }, 'a scraped cycle');
    expect(m.get('wcf_agent_cycles_total{result="ok"}')).toBe(1);
    expect(m.get('wcf_agent_cycles_total{result="error"}')).toBe(0);
    // The gauges say what the cycle did, as its record in the state file does.
    const last = (JSON.parse(readFileSync(join(dir, 'state', 'state.json'), 'utf8')) as {
      lastCycle: { byReason: Record<string, number>; skipped: Record<string, number> };
    }).lastCycle;
    for (const r of ['manual', 'score']) {
      expect(last.byReason[r], r).toBeGreaterThan(0);
      expect(m.get(`wcf_agent_entries_applied{reason="${r}"}`), r).toBe(last.byReason[r]);
    }
    for (const r of ['allowlist', 'whitelist', 'threshold', 'cap', 'too_wide']) {
      expect(last.skipped[r], r).toBeGreaterThan(0);
      expect(m.get(`wcf_agent_entries_skipped{reason="${r}"}`), r).toBe(last.skipped[r]);
    }
    const now = Date.now() / 1000;
    expect(m.get('wcf_agent_last_success_timestamp_seconds')).toBeGreaterThan(now - 60);
    expect(m.get('wcf_agent_cycle_duration_seconds_count')).toBe(1);
    expect(m.get('wcf_agent_api_request_duration_seconds_count{route="/ips",method="GET"}')).toBeGreaterThanOrEqual(3);
    expect(m.get('wcf_agent_api_request_duration_seconds_count{route="/feedback",method="POST"}')).toBeGreaterThanOrEqual(1);
    expect(m.get('wcf_agent_api_errors_total{class="WCF_ERR_API_STATUS"}')).toBe(0);
    expect(m.get('wcf_agent_firewall_apply_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    // dry-run: no kernel counters, zero.
    for (const d of ['in', 'out']) {
      expect(m.get(`wcf_agent_dropped_packets_total{direction="${d}"}`)).toBe(0);
      expect(m.get(`wcf_agent_dropped_bytes_total{direction="${d}"}`)).toBe(0);
      expect(m.get(`wcf_agent_indicators_hit{direction="${d}"}`)).toBe(0);
    }
    expect(m.get('wcf_agent_firewall_counters_read_ok')).toBe(1);
    expect(m.get('wcf_agent_local_overrides{action="allow"}')).toBe(0);
    // The change history: its bytes on disk, and its oldest change (the cycle's).
    const historyBytes = readdirSync(join(dir, 'state'))
      .filter((f) => /^history-\d+\.bin$/.test(f))
      .reduce((sum, f) => sum + statSync(join(dir, 'state', f)).size, 0);
    expect(historyBytes).toBeGreaterThan(0);
    expect(m.get('wcf_agent_history_bytes')).toBe(historyBytes);
    expect(m.get('wcf_agent_history_oldest_timestamp_seconds')).toBeGreaterThan(now - 60);
    expect(m.get('wcf_agent_history_oldest_timestamp_seconds')).toBeLessThanOrEqual(now);

    // Local overrides: counted at scrape time; a local block's entry is counted with reason local.
    expect((await runCli(['block', '198.51.100.77', '--for', '1h', '--config', path])).exitCode).toBe(0);
    expect((await runCli(['allow', '198.51.100.78', '--config', path])).exitCode).toBe(0);
    // The next cycle is a minute away: a reload runs one at once, and its record counts the local block.
    d.signal('SIGHUP');
    const o = await waitFor(async () => {
      const s = parse(await (await fetch(url)).text());
      return s.get('wcf_agent_entries_applied{reason="local"}') === 1 ? s : undefined;
    }, 'a cycle applying the local block');
    expect(o.get('wcf_agent_local_overrides{action="allow"}')).toBe(1);
    expect(o.get('wcf_agent_local_overrides{action="block"}')).toBe(1);

    expect(await d.stop()).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });

  it('counts API errors by class', async () => {
    const { path } = config();
    sim.setFault('http500');
    try {
      const d = new DaemonProcess(path);
      running.push(d);
      const url = /(http:\/\/\S+\/metrics)/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]!;
      // The failed cycle is counted once it has ended (after its report attempt).
      const m = await waitFor(async () => {
        const s = parse(await (await fetch(url)).text());
        return (s.get('wcf_agent_cycles_total{result="error"}') ?? 0) >= 1 ? s : undefined;
      }, 'a failed cycle in the metrics');
      expect(m.get('wcf_agent_api_errors_total{class="WCF_ERR_API_STATUS"}')).toBeGreaterThanOrEqual(1);
      expect(m.get('wcf_agent_cycles_total{result="ok"}')).toBe(0);
    } finally {
      sim.setFault(null);
    }
  });

  it('a malformed metrics_listen stops `run` at start: exit 2 naming the key', async () => {
    const { path } = config({ metrics_listen: 'nonsense' });
    const r = await runCli(['run', '--config', path], { WCF_AGENT_MINUTE_MS: '100' });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/metrics_listen: "nonsense"/);
  });

  it('a port in use is logged and the daemon keeps enforcing', async () => {
    const first = new DaemonProcess(config().path);
    running.push(first);
    const port = /:(\d+)\/metrics/.exec((await first.waitForLog(/^metrics listening on /)).msg)![1]!;
    const secondCfg = config({ metrics_listen: `127.0.0.1:${port}` });
    const second = new DaemonProcess(secondCfg.path);
    running.push(second);
    await second.waitForLog(/^metrics endpoint not started .*EADDRINUSE/);
    await second.waitForLog(/^cycle done/);
    // The second enforces without an endpoint; the port still answers with the first's metrics.
    expect(readFileSync(join(secondCfg.dir, 'state', 'dry-run.ipset'), 'utf8')).toMatch(/^add /m);
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^wcf_agent_cycles_total/m);
    expect(second.count(/^metrics listening on /)).toBe(0);
  });

  it('a non-loopback address is allowed with a warning', async () => {
    const d = new DaemonProcess(config({ metrics_listen: '0.0.0.0:0' }).path);
    running.push(d);
    await d.waitForLog(/is not a loopback address/);
    const port = /^metrics listening on http:\/\/0\.0\.0\.0:(\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)?.[1];
    expect(port, 'listening on 0.0.0.0').toBeDefined();
    // Bound on every address, so loopback reaches it too (the test talks to nothing else).
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^wcf_agent_cycles_total/m);
  });
});
