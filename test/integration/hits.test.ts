import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';
import { fractionalTimes } from '../helpers/json-times.js';
import { ADDR, createLab, isRoot, type Lab } from '../netns/netns.js';
import { startTraffic, type Traffic } from './firewall/traffic.js';

/**
 * `wcf-agent hits` end to end: the built CLI syncs from the simulator into a
 * test namespace, the host there tries to reach a listed peer, and `hits`
 * shows the attempts on that indicator, outbound, with its reason, score and
 * expiry; its totals do not go back when the kernel's counters are removed.
 */

interface HitsJson {
  hits: Array<{ ip: string; direction: string; packets: number; bytes: number; reason: string | null; score: number | null; expires: number | null }>;
}

describe.each(['nftables', 'ipset', 'iptables'] as const)('hits with the %s backend', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let traffic: Traffic;
  let cfg: { path: string; dir: string };

  const cli = async (...args: string[]) => {
    const r = await runCli([...args, '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    return r;
  };
  const hits = async (...args: string[]) => JSON.parse((await cli('hits', '--json', ...args)).stdout) as HitsJson;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({
      indicators: 50,
      seed: 7,
      agentConfig: { maximum_rules: '500', score_threshold: '3', sync_time: '5', running: 'true' },
    });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    sim.upsertIndicator({ ip: ADDR.net24, score: 9.5, is_network: true });
    lab = await createLab();
    traffic = await startTraffic(lab);
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: lab.host.name, retries: 0 });
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('shows outbound attempts on the indicator that blocked them, with reason, score and expiry', async () => {
    await cli('sync', '--once');
    expect(await hits()).toEqual({ hits: [] });
    expect(await traffic.connectOut(ADDR.blocked)).toBe('timeout');
    expect(await traffic.connectOut(ADDR.inNet)).toBe('timeout');
    const out = (await hits('--direction', 'out')).hits;
    const one = out.find((h) => h.ip === ADDR.blocked);
    expect(one).toMatchObject({ direction: 'out', reason: 'score' });
    expect(one!.packets).toBeGreaterThanOrEqual(1);
    expect(one!.bytes).toBeGreaterThanOrEqual(one!.packets * 40);
    expect(one!.score).toBeGreaterThan(9);
    expect(one!.expires).toBeGreaterThan(Date.now() / 1000);
    // Whole epoch seconds, as plan --json has them (the solved expiry used to print with its fraction).
    expect(Number.isInteger(one!.expires)).toBe(true);
    expect(fractionalTimes(out)).toEqual([]);
    // The /24's address is counted on the /24 indicator.
    expect(out.find((h) => h.ip === ADDR.net24)).toMatchObject({ direction: 'out', reason: 'score' });
    expect(out.every((h) => h.direction === 'out')).toBe(true);
    expect((await hits('--direction', 'out', '--top', '1')).hits).toHaveLength(1);
    const text = (await cli('hits')).stdout;
    expect(text).toMatch(new RegExp(`${ADDR.blocked.replace(/\./g, '\\.')}\\s+out\\s+\\d+`));
  });

  it('keeps its totals when the kernel counters are removed (flush), and a later sync counts on from them', async () => {
    const before = (await hits('--direction', 'out')).hits.find((h) => h.ip === ADDR.blocked)!;
    await cli('sync', '--once'); // the cycle saves the running totals
    await cli('flush');
    const after = (await hits('--direction', 'out')).hits.find((h) => h.ip === ADDR.blocked);
    expect(after?.packets).toBeGreaterThanOrEqual(before.packets);
    await cli('sync', '--once');
    expect(await traffic.connectOut(ADDR.blocked)).toBe('timeout');
    const again = (await hits('--direction', 'out')).hits.find((h) => h.ip === ADDR.blocked)!;
    expect(again.packets).toBeGreaterThan(after!.packets);
    await cli('flush');
  });

  it('rejects a bad --top or --direction, naming the option', async () => {
    for (const [flag, value] of [['--top', '0'], ['--direction', 'up']] as const) {
      const r = await runCli(['hits', flag, value, '--config', cfg.path]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(`${flag}:`);
    }
  });
});
