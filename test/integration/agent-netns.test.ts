import { kernelEntries } from '../helpers/kernel.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { appliedIps, runCli, writeConfig, waitFor } from '../helpers/cli.js';
import { ADDR, createLab, isRoot, snapshot, type Lab, type RulesetSnapshot } from '../netns/netns.js';

/**
 * The whole agent (built CLI) against the simulator on loopback, applying its
 * rules inside a test network namespace (config `netns`), with real TCP
 * traffic from a peer namespace. Root is required: without it these fail
 * loudly rather than being skipped.
 */

const THRESHOLD = 4;
/** Seconds until a built-in decayed score S falls to T. */
const crossing = (S: number, T: number) => 3600 * (2.5 * S + (S / 3) * Math.log(S / T - 1));
/** Seconds from the start of the suite until ADDR.other's score falls below the threshold. */
const OTHER_LEFT_S = 300;
let otherCrossesAt = 0;

describe.each(['ipset', 'nftables'] as const)('agent with the %s backend in a namespace', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let cfg: { path: string; dir: string };
  let original: RulesetSnapshot;

  const kernelSet = async (): Promise<string[]> => {
    if (plugin === 'ipset') {
      const out = await lab.host.exec('ipset', ['save', 'wcf-blocklist']);
      // The ownership marker (a nomatch element) is not an entry.
      return out.split('\n').filter((l) => l.startsWith('add ') && !l.includes(' nomatch ')).map((l) => l.split(' ')[2]!).sort();
    }
    // Both nft sets (addresses and networks).
    return kernelEntries(lab.host, 'nftables');
  };
  const sync = async (...extra: string[]) => {
    const r = await runCli(['sync', '--once', '--json', '--config', cfg.path, ...extra]);
    expect(r.exitCode, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as { plugin: string };
  };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({
      indicators: 2000,
      seed: 5,
      agentConfig: { maximum_rules: '500', score_threshold: String(THRESHOLD), sync_time: '5', running: 'true' },
    });
    lab = await createLab();
    // Unrelated objects someone else owns: the agent must leave them byte-for-byte alone.
    await lab.host.exec('iptables', ['-N', 'SOMEONE-ELSE']);
    await lab.host.exec('iptables', ['-A', 'INPUT', '-s', '203.0.113.9', '-j', 'SOMEONE-ELSE']);
    await lab.host.exec('ipset', ['create', 'someone-else', 'hash:ip']);
    await lab.host.exec('nft', ['add', 'table', 'inet', 'someone_else']);
    original = await snapshot(lab.host);

    const now = Math.floor(Date.now() / 1000);
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    sim.upsertIndicator({ ip: ADDR.net24, score: 9.5, is_network: true });
    // Decays below the threshold OTHER_LEFT_S from now: minutes of margin, so a slow start on a
    // loaded machine cannot make it decay before the first sync selects it.
    otherCrossesAt = now + OTHER_LEFT_S;
    sim.upsertIndicator({ ip: ADDR.other, score: 5, ts: now - Math.round(crossing(5, THRESHOLD)) + OTHER_LEFT_S });
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: lab.host.name, retries: 0 });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('puts exactly the selected set into the kernel and drops traffic from it', async () => {
    const out = await sync();
    expect(out.plugin).toBe(plugin);
    const selected = appliedIps(join(cfg.dir, 'state'), plugin);
    expect(selected).toEqual(expect.arrayContaining([ADDR.blocked, ADDR.net24, ADDR.other]));
    expect(selected).not.toContain(ADDR.allowed);
    expect(await kernelSet()).toEqual(selected);

    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.inNet)).toBe('timeout'); // inside the /24: the network stays a network
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
  });

  it('an entry carries a kernel timeout that ends when its score decays (the kernel removes it without the agent)', async () => {
    // The remaining timeout the kernel holds, read with the distribution's tools.
    const remaining = async (ip: string): Promise<number | undefined> => {
      if (plugin === 'ipset') {
        const line = (await lab.host.exec('ipset', ['save', 'wcf-blocklist'])).split('\n').find((l) => l.startsWith(`add wcf-blocklist ${ip} `));
        const m = line ? / timeout (\d+)/.exec(line) : null;
        return m ? Number(m[1]) : undefined;
      }
      const out = JSON.parse(await lab.host.exec('nft', ['-j', 'list', 'set', 'inet', 'wcf_agent', 'wcf-blocklist'])) as {
        nftables: { set?: { elem?: { elem?: { val: unknown; expires?: number } }[] } }[];
      };
      const elem = out.nftables.find((o) => o.set)?.set?.elem?.find((e) => e.elem?.val === ip);
      return elem?.elem?.expires;
    };
    const left = await remaining(ADDR.other);
    const expected = otherCrossesAt - Date.now() / 1000;
    expect(left, `${ADDR.other} has a kernel timeout`).toBeDefined();
    // Floor of the remaining seconds, and a second of kernel rounding either way.
    expect(left!).toBeGreaterThanOrEqual(Math.floor(expected) - 2);
    expect(left!).toBeLessThanOrEqual(Math.ceil(expected) + 1);
  });

  it('a second sync adds no duplicate hook', async () => {
    const hooks = async () => (await lab.host.exec('nft', ['list', 'table', 'inet', 'wcf_agent'])).match(/@wcf-blocklist/g)?.length ?? 0;
    await sync();
    const once = plugin === 'nftables' ? await hooks() : 0;
    await sync();
    if (plugin === 'ipset') {
      for (const chain of ['INPUT', 'FORWARD']) {
        const rules = await lab.host.exec('iptables', ['-S', chain]);
        expect(rules.split('\n').filter((l) => l.includes('-j WCF-AGENT')).length).toBe(1);
      }
    } else {
      const tables = await lab.host.exec('nft', ['list', 'tables']);
      expect(tables.split('\n').filter((l) => l.includes('wcf_agent')).length).toBe(1);
      const table = await lab.host.exec('nft', ['list', 'table', 'inet', 'wcf_agent']);
      // prerouting: source, and destination of forwarded packets; output: destination (direction both); two rules each.
      expect(table.match(/@wcf-blocklist /g)!.length).toBe(6);
    }
  });

  it('a whitelist decision removes the entry on the next cycle and lets traffic through', async () => {
    sim.setDecision(ADDR.blocked, 0);
    await sync();
    expect(await kernelSet()).not.toContain(ADDR.blocked);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
  });

  it('a threshold change removes entries that no longer qualify', async () => {
    sim.setAgentConfig(sim.agid, { score_threshold: '10' });
    // Most entries go at once: past the shrink guard, so the operator forces it.
    await sync('--force');
    expect(await kernelSet()).not.toContain(ADDR.net24);
    expect(await lab.connect(ADDR.inNet)).toBe('connected');
    sim.setAgentConfig(sim.agid, { score_threshold: String(THRESHOLD) });
  });

  it('flush restores the exact original ruleset', async () => {
    const r = await runCli(['flush', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).toContain(`flushed: removed the ${plugin} objects owned by wcf-agent`);
    expect(await snapshot(lab.host)).toEqual(original);
    // A second flush finds nothing and says so (still exit 0, still nothing else touched).
    const again = await runCli(['flush', '--config', cfg.path]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stderr).toContain(`nothing to flush: no ${plugin} objects owned by wcf-agent were there`);
    expect(again.stderr).not.toContain('flushed: removed');
    expect(await snapshot(lab.host)).toEqual(original);
  });
});

describe('switching backends', () => {
  it('removes the previous backend objects when the plugin changes', async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    const sim = await startSimulator({ indicators: 500, seed: 9, agentConfig: { maximum_rules: '100', score_threshold: '3', running: 'true' } });
    const lab = await createLab();
    try {
      const original = await snapshot(lab.host);
      sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
      const base = { agid: sim.agid, base_url: sim.url, token: sim.token, netns: lab.host.name, retries: 0 };
      const cfg = writeConfig({ ...base, plugin: 'ipset' });
      expect((await runCli(['sync', '--once', '--config', cfg.path])).exitCode).toBe(0);
      expect(await lab.host.exec('ipset', ['list', '-n'])).toContain('wcf-blocklist');

      writeFileSync(cfg.path, JSON.stringify({ ...base, plugin: 'nftables', state_dir: 'state' }));
      const r = await runCli(['sync', '--once', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/backend changed from ipset to nftables/);
      expect(await lab.host.exec('ipset', ['list', '-n'])).not.toContain('wcf-blocklist');
      expect(await lab.host.exec('iptables', ['-S'])).not.toContain('WCF-AGENT');
      expect(await lab.connect(ADDR.blocked)).toBe('timeout'); // now blocked by nftables

      expect((await runCli(['flush', '--config', cfg.path])).exitCode).toBe(0);
      expect(await snapshot(lab.host)).toEqual(original);
    } finally {
      await lab.destroy();
      await sim.close();
    }
  });
});
