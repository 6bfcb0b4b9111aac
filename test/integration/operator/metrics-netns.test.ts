import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { ADDR, createLab, isRoot, type Lab } from '../../netns/netns.js';
import { parseExposition } from '../../helpers/metrics.js';

/**
 * `run` with metrics and `doctor`, both against a config whose `netns` points at
 * a test namespace with a real backend: the drop counters and the owned objects
 * must be read INSIDE that namespace (where the rules are), never in the root
 * namespace. Real TCP from a blocked peer address is dropped and counted.
 */

interface DoctorJson {
  checks: { name: string; status: 'ok' | 'warn' | 'fail'; message: string; hint: string | null }[];
  ok: boolean;
}
const byName = (d: DoctorJson) => Object.fromEntries(d.checks.map((c) => [c.name, c]));

const parse = parseExposition;

const OBJECTS = {
  // The hooks are objects too (status says not enforcing without them); direction both hooks output as well,
  // and has a hits set for each side.
  nftables: /^nft table inet wcf_agent present, nft set inet wcf_agent wcf-blocklist present, nft set inet wcf_agent wcf-blocklist-nets present, nft set inet wcf_agent wcf-blocklist-drops present, nft set inet wcf_agent wcf-blocklist-in present, nft set inet wcf_agent wcf-blocklist-out present, nft chain inet wcf_agent prerouting present, nft chain inet wcf_agent output present$/,
  ipset: /^ipset wcf-blocklist present, ipset wcf-blocklist-in present, ipset wcf-blocklist-out present, iptables chain WCF-AGENT present, iptables hook INPUT -> WCF-AGENT present, iptables hook FORWARD -> WCF-AGENT present, iptables hook OUTPUT -> WCF-AGENT present$/,
} as const;

describe.each(['nftables', 'ipset'] as const)('metrics and doctor with netns, %s backend', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let cfg: Record<string, unknown>;
  let daemon: DaemonProcess | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    // sync_time 600 (x 100 ms per "minute"): one cycle during the test.
    sim = await startSimulator({ indicators: 300, seed: 8, agentConfig: { maximum_rules: '200', score_threshold: '4', sync_time: '600', running: 'true' } });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    lab = await createLab();
    cfg = {
      agid: sim.agid,
      base_url: sim.url,
      token: sim.token,
      plugin,
      netns: lab.host.name,
      retries: 0,
      jitter_seconds: 0,
      metrics_listen: '127.0.0.1:0',
      allowlist: ['203.0.113.10'],
    };
  });
  afterAll(async () => {
    await daemon?.stop();
    await lab?.destroy();
    await sim?.close();
  });

  it('doctor before the first sync: enters the namespace, lists its addresses, objects not created yet', async () => {
    const { path } = writeConfig(cfg);
    const r = await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' });
    const c = byName(JSON.parse(r.stdout) as DoctorJson);
    expect(r.exitCode, r.stdout).toBe(0);
    expect(c.netns).toMatchObject({ status: 'ok', message: expect.stringContaining(`network namespace ${lab.host.name} (127.0.0.1, ${ADDR.host})`) });
    expect(c.plugin!.message).toMatch(new RegExp(`plugin ${plugin} \\(configured; auto would pick`));
    expect(c['firewall objects']).toMatchObject({ status: 'warn', message: expect.stringMatching(/not created yet/) });
    // The namespace's address is protected like the host's, and doctor says so.
    expect(c.allowlist).toMatchObject({ status: 'ok', message: expect.stringContaining(`namespace ${lab.host.name} addresses 127.0.0.1, ${ADDR.host},`) });
  });

  it('`run` counts the packets its rules drop in the namespace; doctor then finds the objects there', async () => {
    const { path } = writeConfig(cfg);
    daemon = new DaemonProcess(path);
    const url = /(http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec((await daemon.waitForLog(/^metrics listening on /)).msg)![1]!;
    await daemon.waitForLog(/^cycle done/);
    const scrape = async () => parse(await (await fetch(url)).text());

    const before = await scrape();
    expect(before.get('wcf_agent_cycles_total{result="ok"}')).toBe(1);
    expect(before.get('wcf_agent_firewall_counters_read_ok')).toBe(1);
    expect(before.get('wcf_agent_dropped_packets_total{direction="in"}')).toBe(0);
    expect(before.get('wcf_agent_dropped_packets_total{direction="out"}')).toBe(0);

    // Real TCP from the blocked address: the SYN (and its retransmissions) hit the agent's rule.
    expect(await lab.connect(ADDR.blocked, 1200)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    // Counter reads are cached for 1 s: poll until a fresh one shows the drops.
    const m = await waitFor(async () => {
      const s = await scrape();
      return (s.get('wcf_agent_dropped_packets_total{direction="in"}') ?? 0) > 0 ? s : undefined;
    }, 'a non-zero dropped packets count', 10_000, 200);
    const packets = m.get('wcf_agent_dropped_packets_total{direction="in"}')!;
    expect(packets).toBeGreaterThanOrEqual(1);
    expect(m.get('wcf_agent_dropped_bytes_total{direction="in"}')).toBeGreaterThanOrEqual(packets * 40); // IPv4 + TCP headers at least
    // Only the blocked peer's inbound SYNs: one indicator, nothing outbound.
    expect(m.get('wcf_agent_indicators_hit{direction="in"}')).toBe(1);
    expect(m.get('wcf_agent_dropped_packets_total{direction="out"}')).toBe(0);
    expect(m.get('wcf_agent_firewall_counters_read_ok')).toBe(1);
    expect(daemon.count(/cannot read the firewall drop counters/)).toBe(0);

    // doctor with the same config reads the namespace: the objects the daemon made are there.
    const d = JSON.parse((await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' })).stdout) as DoctorJson;
    expect(byName(d)['firewall objects']).toMatchObject({ status: 'ok', message: expect.stringMatching(OBJECTS[plugin]) });
    // Control: without netns the root namespace is checked, where the agent created nothing.
    const { path: rootPath } = writeConfig({ ...cfg, netns: undefined });
    const root = JSON.parse((await runCli(['doctor', '--json', '--config', rootPath], { WCF_LOG_LEVEL: 'silent' })).stdout) as DoctorJson;
    expect(byName(root)['firewall objects']!.status).toBe('warn');
    expect(byName(root).netns).toBeUndefined();

    expect(await daemon.stop()).toBe(0);
    daemon = undefined;
  });

  it('doctor with netns naming a missing namespace: fail with a hint, exit 4', async () => {
    const { path } = writeConfig({ ...cfg, netns: `${lab.host.name}-gone` });
    const r = await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' });
    expect(r.exitCode, r.stdout).toBe(4);
    expect(byName(JSON.parse(r.stdout) as DoctorJson).netns).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/cannot enter network namespace .*-gone/),
      hint: expect.stringMatching(/ip netns add/),
    });
  });
});
