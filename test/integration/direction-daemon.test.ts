import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { ADDR, createLab, isRoot, snapshot, type Lab, type RulesetSnapshot } from '../netns/netns.js';
import { received, startTraffic, type Traffic } from './firewall/traffic.js';

/**
 * `direction` changed on a running daemon (SIGHUP): the hooks are rebuilt,
 * a listed peer stays blocked the whole time, the new side is matched, and
 * `flush` leaves the ruleset as it was before the agent.
 */
describe.each(['nftables', 'ipset', 'iptables'] as const)('direction change by SIGHUP with the %s backend', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let traffic: Traffic;
  let cfg: { path: string; dir: string };
  let original: RulesetSnapshot;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 20, seed: 3, agentConfig: { maximum_rules: '100', score_threshold: '3', sync_time: '5', running: 'true' } });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    lab = await createLab();
    traffic = await startTraffic(lab);
    original = await snapshot(lab.host);
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: lab.host.name, retries: 0, jitter_seconds: 0, direction: 'inbound' });
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('switches from inbound to outbound without letting the listed peer through, then flushes to the original ruleset', async () => {
    const d = new DaemonProcess(cfg.path);
    try {
      await d.waitForLog(/^cycle done/);
      await traffic.udpOut(ADDR.blocked, 'before-reload');
      expect(await received(traffic.peerUdp, 'before-reload')).toBe(true); // inbound only: datagrams to it leave

      const base = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
      writeFileSync(cfg.path, JSON.stringify({ ...base, direction: 'outbound' }));
      const from = d.logs.length;
      d.signal('SIGHUP');
      // Done once a cycle has ended after "configuration reloaded": a cycle already in flight at the
      // SIGHUP (cycles run every half second here) ends first, with the old direction, and does not count.
      const reloadedCycleDone = () => {
        const at = d.logs.findIndex((l, i) => i >= from && /^configuration reloaded/.test(l.msg));
        return at >= 0 && d.logs.slice(at + 1).some((l) => /^cycle done/.test(l.msg));
      };
      // Connection attempts from the listed peer all through the reload: none may get through.
      const attempts: string[] = [];
      while (!reloadedCycleDone()) attempts.push(await lab.connect(ADDR.blocked, 300));
      expect(attempts.length).toBeGreaterThan(0);
      expect(attempts.filter((a) => a !== 'timeout')).toEqual([]);

      await traffic.udpOut(ADDR.blocked, 'after-reload');
      await traffic.udpOut(ADDR.allowed, 'after-allowed');
      expect(await received(traffic.peerUdp, 'after-allowed')).toBe(true);
      expect(traffic.peerUdp.lines.some((l) => l.includes('after-reload'))).toBe(false);
      await d.stop();
    } finally {
      await d.stop().catch(() => undefined);
    }
    const r = await runCli(['flush', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await snapshot(lab.host)).toEqual(original);
  });
});
