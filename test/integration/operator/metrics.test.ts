import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig, waitFor } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { parseExposition } from '../../helpers/metrics.js';

let sim: Simulator;
const running: DaemonProcess[] = [];
beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 13, agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' } });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
});

function config(extra: Record<string, unknown> = {}) {
  return writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, metrics_listen: '127.0.0.1:0', ...extra });
}

const parse = parseExposition;

describe('metrics endpoint of `run`', () => {
  it('serves the agent metrics after a cycle, and stops with the daemon', async () => {
    const { path } = config();
    const d = new DaemonProcess(path);
    running.push(d);
    const listening = await d.waitForLog(/^metrics listening on /);
    const url = /(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(listening.msg)![1]!;
    await d.waitForLog(/^cycle done/, 2);
    const m = await waitFor(async () => {
      const s = parse(await (await fetch(url)).text());
      return (s.get('wcf_agent_cycles_total{result="ok"}') ?? 0) >= 1 ? s : undefined;
    }, 'a scraped cycle');
    expect(m.get('wcf_agent_cycles_total{result="error"}')).toBe(0);
    expect(m.get('wcf_agent_entries_applied{reason="score"}')).toBeGreaterThan(0);
    expect(m.get('wcf_agent_entries_applied{reason="manual"}')).toBeGreaterThanOrEqual(0);
    expect(m.get('wcf_agent_entries_skipped{reason="threshold"}')).toBeGreaterThan(0);
    for (const r of ['allowlist', 'whitelist', 'cap', 'too_wide']) expect(m.has(`wcf_agent_entries_skipped{reason="${r}"}`)).toBe(true);
    const now = Date.now() / 1000;
    expect(m.get('wcf_agent_last_success_timestamp_seconds')).toBeGreaterThan(now - 60);
    expect(m.get('wcf_agent_cycle_duration_seconds_count')).toBeGreaterThanOrEqual(1);
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
    const second = new DaemonProcess(config({ metrics_listen: `127.0.0.1:${port}` }).path);
    running.push(second);
    await second.waitForLog(/^metrics endpoint not started .*EADDRINUSE/);
    await second.waitForLog(/^cycle done/);
  });

  it('a non-loopback address is allowed with a warning', async () => {
    const d = new DaemonProcess(config({ metrics_listen: '0.0.0.0:0' }).path);
    running.push(d);
    await d.waitForLog(/is not a loopback address/);
    await d.waitForLog(/^metrics listening on http:\/\/0\.0\.0\.0:\d+\/metrics/);
  });
});
