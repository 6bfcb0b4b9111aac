import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, waitFor, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { Netns, isRoot } from '../../netns/netns.js';

/**
 * A process with CAP_NET_ADMIN replaces the agent's table with one that claims another agent
 * instance and holds nothing. The agent must not take it over, and must not pretend: the log,
 * /readyz, `status` and `doctor` name the marker found, say that nothing of the agent's is
 * enforced (not "previous firewall state kept", not "repairing") and how to take the names back;
 * once taken back, the agent enforces again.
 */

const MARK = 'wcf-agent deadbeefdeadbeef';
let sim: Simulator;
let ns: Netns;
let d: DaemonProcess | undefined;

beforeAll(async () => {
  if (!isRoot) throw new Error('the ownership tests need root (network namespaces)');
  sim = await startSimulator({ indicators: 300, seed: 4, agentConfig: { maximum_rules: '100', score_threshold: '1', sync_time: '1', running: 'true' } });
  ns = await Netns.create();
});
afterAll(async () => {
  await d?.stop();
  await ns?.destroy();
  await sim?.close();
});

describe('a table that claims another agent instance', () => {
  it('is said to be what it is everywhere, nothing of the agent’s enforced, and taken back when its owner is gone', { timeout: 120_000 }, async () => {
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
      metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0,
    });
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '2000' });
    const base = /(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]!;
    const readyz = async () => {
      const r = await fetch(`${base}/readyz`);
      return { status: r.status, text: (await r.text()).trim() };
    };
    await d.waitForLog(/^cycle done/, 1, 60_000);
    await waitFor(async () => (await readyz()).status === 200, 'ready', 20_000);

    await ns.exec('nft', ['-f', '-'], `add table inet wcf_agent\ndelete table inet wcf_agent\ntable inet wcf_agent {\n\tcomment "${MARK}"\n\tset wcf-blocklist-in { type ipv4_addr; size 65536; flags dynamic,timeout; timeout 604800s; counter; comment "${MARK}"; }\n}\n`);
    const said = await waitFor(async () => {
      const r = await readyz();
      return r.status === 503 && r.text.includes(MARK) ? r : undefined;
    }, 'readyz naming the marker', 30_000);
    expect(said.text).toMatch(/nothing of this agent's is enforced/);
    expect(said.text).toMatch(/nft delete table inet wcf_agent/);
    expect(said.text).not.toMatch(/repairing/);
    // The next cycle is refused and says so, not that the previous state is kept.
    const refused = await d.waitForLog(/^sync refused, nothing written: /, 1, 30_000);
    expect(refused.msg).toContain(MARK);
    expect(d.count(/^sync failed, previous firewall state kept/)).toBe(0);
    const status = await runCli(['status', '--config', cfg.path]);
    expect(status.stdout).toMatch(new RegExp(`enforcing +no \\(nft table inet wcf_agent is not the agent's.*${MARK}.*nothing of this agent's is enforced`));
    const doctor = await runCli(['doctor', '--config', cfg.path]);
    expect(doctor.stdout).toMatch(new RegExp(`FAIL +firewall objects +nft table inet wcf_agent is not the agent's.*${MARK}`));
    // Untouched.
    expect(await ns.exec('nft', ['list', 'table', 'inet', 'wcf_agent'])).toContain(MARK);

    // Taken back as the message says: the agent builds its own again and is ready.
    await ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
    await waitFor(async () => (await readyz()).status === 200, 'ready again after the table was taken back', 30_000);
    expect(await ns.exec('nft', ['list', 'table', 'inet', 'wcf_agent'])).not.toContain(MARK);
    expect(await d.stop()).toBe(0);
    d = undefined;
  });
});
