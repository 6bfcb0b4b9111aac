import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { ADDR, createLab, isRoot, type Lab } from '../netns/netns.js';
import { kernelSet } from '../netns/relay.js';

/**
 * The start-up restore goes through the protected set as it is at start-up:
 * the daemon (built CLI, a child process) applies its rules in a test
 * namespace (config `netns`); the API is down when it restarts. Root required.
 */
describe.each(['nftables', 'ipset'] as const)('start-up restore with the %s backend', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let dir: string | undefined;
  const daemons: DaemonProcess[] = [];

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 100, seed: 23, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '5', running: 'true' } });
    lab = await createLab();
  });
  // Each test's agent has a state dir of its own: what one left in the kernel is, to the next,
  // another agent's table (refused, code 32). Removed between tests, as a reboot would.
  afterEach(async () => {
    for (const d of daemons.splice(0)) await d.stop();
    await lab.host.exec('nft', ['flush', 'ruleset']);
    await lab.host.exec('sh', ['-c', 'ipset destroy 2>/dev/null; true']);
  });
  afterAll(async () => {
    for (const d of daemons) await d.stop();
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const start = (path: string) => {
    const d = new DaemonProcess(path);
    daemons.push(d);
    return d;
  };

  it('an address added to allowlist after it was applied is not restored, with the API down; the rest is', async () => {
    const base = { agid: sim.agid, token: sim.token, plugin, netns: lab.host.name, retries: 0, jitter_seconds: 0, connect_timeout_ms: 500, request_timeout_ms: 1000 };
    const c = writeConfig({ ...base, base_url: sim.url });
    dir = c.dir;
    sim.setDecision(ADDR.blocked, 1);
    sim.setDecision(ADDR.inNet, 1);
    try {
      const first = start(c.path);
      await first.waitForLog(/^cycle done/);
      expect(await kernelSet(lab.host, plugin)).toEqual(expect.arrayContaining([ADDR.blocked, ADDR.inNet]));
      expect(await first.stop(), first.raw.slice(-12).join('\n')).toBe(0);

      // The operator allowlists the address; the API goes down. doctor names the protected address the kernel still holds.
      const cfg = JSON.parse(readFileSync(c.path, 'utf8')) as Record<string, unknown>;
      writeFileSync(c.path, JSON.stringify({ ...cfg, allowlist: [ADDR.blocked], base_url: 'http://127.0.0.1:1/api/v1' }));
      const doctor = await runCli(['doctor', '--json', '--config', c.path]);
      const check = (JSON.parse(doctor.stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((x) => x.name === 'protected set');
      expect(check).toMatchObject({ status: 'warn' });
      expect(check!.message.split('\n')[0]).toBe(`the kernel set holds protected addresses: ${ADDR.blocked} (allowlist ${ADDR.blocked})`);

      // A reboot: the kernel forgets the agent's objects.
      await lab.host.exec('nft', ['flush', 'ruleset']);
      await lab.host.exec('ipset', ['destroy']);

      const second = start(c.path);
      const restored = await second.waitForLog(/^restored the last known good set/);
      expect(restored).toMatchObject({ protectedLeftOut: 1 });
      expect(second.logs.some((l) => l.msg === `restore: ${ADDR.blocked} is protected (allowlist ${ADDR.blocked}) and is removed from the firewall`)).toBe(true);
      await second.waitForLog(/^sync failed/);
      const set = await kernelSet(lab.host, plugin);
      expect(set).not.toContain(ADDR.blocked);
      expect(set).toContain(ADDR.inNet);
      expect(await lab.connect(ADDR.blocked)).toBe('connected');
      expect(await lab.connect(ADDR.inNet)).toBe('timeout');
      // The applied set on disk no longer holds it either (what the next restore starts from).
      const applied = JSON.parse(readFileSync(`${c.dir}/state/applied-${plugin}.json`, 'utf8')) as { entries: { cidr: string }[] };
      expect(applied.entries.map((e) => e.cidr)).not.toContain(ADDR.blocked);
      expect(await second.stop(), second.raw.slice(-12).join('\n')).toBe(0);
    } finally {
      sim.setDecision(ADDR.blocked, -1);
      sim.setDecision(ADDR.inNet, -1);
    }
  });

  it('a repair between cycles puts back the last applied set without an address that became protected since (now the host’s own)', async () => {
    const c = writeConfig({ agid: sim.agid, token: sim.token, plugin, netns: lab.host.name, retries: 0, jitter_seconds: 0, base_url: sim.url, watch_interval_seconds: 1 });
    sim.setDecision(ADDR.blocked, 1);
    sim.setDecision(ADDR.inNet, 1);
    const own = ['addr', 'add', `${ADDR.blocked}/32`, 'dev', 'lo'];
    try {
      // Minutes of a real length: no cycle runs between the removal and the repair (sync_time 5).
      const d = new DaemonProcess(c.path, { WCF_AGENT_MINUTE_MS: '60000' });
      daemons.push(d);
      await d.waitForLog(/^cycle done/);
      expect(await kernelSet(lab.host, plugin)).toEqual(expect.arrayContaining([ADDR.blocked, ADDR.inNet]));
      // The address becomes the host's own, then another tool removes the agent's objects.
      await lab.host.exec('ip', own);
      if (plugin === 'nftables') await lab.host.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
      else await lab.host.exec('ipset', ['flush', 'wcf-blocklist']);
      await d.waitForLog(/put back with the last applied set/).catch((err: Error) => {
        throw new Error(`${err.message}\n${d.raw.slice(-15).join("\n")}`);
      });
      expect(d.logs.some((l) => new RegExp(`^repair: ${ADDR.blocked.replace(/\./g, '\\.')} is protected \\(`).test(l.msg))).toBe(true);
      const set = await kernelSet(lab.host, plugin);
      expect(set).toContain(ADDR.inNet);
      expect(set).not.toContain(ADDR.blocked);
      expect(await d.stop(), d.raw.slice(-12).join('\n')).toBe(0);
    } finally {
      await lab.host.exec('ip', ['addr', 'del', `${ADDR.blocked}/32`, 'dev', 'lo']).catch(() => undefined);
      sim.setDecision(ADDR.blocked, -1);
      sim.setDecision(ADDR.inNet, -1);
      rmSync(c.dir, { recursive: true, force: true });
    }
  });
});
