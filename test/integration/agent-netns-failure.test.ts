import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig, waitFor, type CliResult } from '../helpers/cli.js';
import { ADDR, Netns, createLab, isRoot, snapshot, type Lab, type RulesetSnapshot } from '../netns/netns.js';

/**
 * A firewall apply that fails inside a cycle, on real netfilter in a test
 * namespace (config `netns`): `sync --once` exits 4, the report carries code
 * 30, and the kernel keeps exactly what it held before. Also: `plugin: auto`
 * names the backend it picked in the log and in the report. Root required.
 */

const AGENT_CONFIG = { maximum_rules: '20', score_threshold: '4', sync_time: '5', running: 'true' } as const;

interface SyncJson {
  ok: boolean;
  code: number;
  error: string | null;
  message: string | null;
  plugin: string;
  applied: number;
  selected: number | null;
}

/** Remaining timeouts (ipset `timeout N` on add lines, nft `expires ...`) tick down: drop them, keep everything else. */
function stable(s: RulesetSnapshot): RulesetSnapshot {
  return {
    iptables: s.iptables,
    ipset: s.ipset.replace(/^(add \S+ \S+) timeout \d+/gm, '$1'),
    nft: s.nft.replace(/ expires [0-9dhms]+/g, ''),
  };
}

async function ipsetEntries(ns: Netns, set = 'wcf-blocklist'): Promise<string[]> {
  const out = await ns.exec('ipset', ['save', set]);
  return out
    .split('\n')
    .filter((l) => l.startsWith('add ') && !l.includes(' nomatch ')) // not the ownership marker
    .map((l) => l.split(' ')[2]!)
    .sort();
}

function parseSync(r: CliResult): SyncJson {
  try {
    return JSON.parse(r.stdout) as SyncJson;
  } catch {
    throw new Error(`sync --json printed no JSON (exit ${r.exitCode}):\n${r.stdout}\n${r.stderr}`);
  }
}

function lastReport(sim: Simulator): { code: number; plugin: string; blacklist: string[] } {
  const mine = sim.reports.filter((r) => r.agid === sim.agid);
  expect(mine.length, 'the agent reported').toBeGreaterThan(0);
  return mine.at(-1)!.body as { code: number; plugin: string; blacklist: string[] };
}

describe('ipset backend: a failed apply keeps the kernel as it was', () => {
  let sim: Simulator;
  let lab: Lab;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 2000, seed: 31, agentConfig: { ...AGENT_CONFIG } });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    lab = await createLab();
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  const config = () => writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'ipset', netns: lab.host.name, retries: 0 });

  it('a set of another type under the agent’s set name: not the agent’s, exit 4, code 32, nothing changed', async () => {
    // Someone else's hash:ip set named like the agent's set (ipset cannot swap across types).
    await lab.host.exec('ipset', ['create', 'wcf-blocklist', 'hash:ip']);
    await lab.host.exec('ipset', ['add', 'wcf-blocklist', ADDR.allowed]);
    const cfg = config();
    try {
      const before = await snapshot(lab.host);
      const reports = sim.reports.length;
      const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(4);
      const out = parseSync(r);
      expect(out.ok).toBe(false);
      expect(out.code).toBe(32);
      expect(out.error).toBe('WCF_ERR_NOT_OWNED');
      expect(out.message).toMatch(/^ipset set wcf-blocklist exists and was not created by wcf-agent \(type hash:ip/);
      expect(out.applied).toBe(0);
      // The report got through and says so.
      expect(sim.reports.length).toBeGreaterThan(reports);
      expect(lastReport(sim)).toMatchObject({ code: 32, plugin: 'ipset', blacklist: [] });
      // Kernel untouched: the foreign set keeps its entry, no chain or hook appeared.
      expect(await snapshot(lab.host)).toEqual(before);
      expect(await ipsetEntries(lab.host)).toEqual([ADDR.allowed]);
      expect(await lab.host.exec('iptables', ['-S'])).not.toContain('WCF-AGENT');
      expect(await lab.connect(ADDR.blocked)).toBe('connected');
    } finally {
      await lab.host.exec('ipset', ['destroy', 'wcf-blocklist']);
      rmSync(cfg.dir, { recursive: true, force: true });
    }
  });

  it('a good apply, then a failing one: the previous set stays in the kernel and keeps blocking', async () => {
    const cfg = config();
    try {
      const first = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
      expect(first.exitCode, first.stderr).toBe(0);
      expect(parseSync(first).applied).toBe(20);
      const good = [...lastReport(sim).blacklist].sort();
      expect(good.length).toBe(20);
      expect(good).toContain(ADDR.blocked);
      expect(await ipsetEntries(lab.host)).toEqual(good);
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');

      // A third party holds the agent's swap-set name in a rule of its own: the
      // next full rebuild (ten times the entries) cannot run its `ipset restore`.
      await lab.host.exec('ipset', ['create', 'wcf-blocklist-tmp', 'hash:net']);
      await lab.host.exec('iptables', ['-N', 'SOMEONE-ELSE']);
      await lab.host.exec('iptables', ['-A', 'SOMEONE-ELSE', '-m', 'set', '--match-set', 'wcf-blocklist-tmp', 'src', '-j', 'RETURN']);
      sim.setAgentConfig(sim.agid, { maximum_rules: '200' });
      const before = stable(await snapshot(lab.host));

      const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(4);
      const out = parseSync(r);
      expect(out.code).toBe(30);
      expect(out.error).toBe('WCF_ERR_FIREWALL');
      expect(out.message).toMatch(/in use/i); // the failing command's own words
      expect(out.selected).toBe(200); // it did want a bigger set
      expect(out.applied).toBe(good.length); // what stays applied
      const report = lastReport(sim);
      expect(report.code).toBe(30);
      expect([...report.blacklist].sort()).toEqual(good);

      expect(stable(await snapshot(lab.host))).toEqual(before);
      expect(await ipsetEntries(lab.host)).toEqual(good);
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');

      // Recovery: the blocker goes away; the next sync applies the bigger set.
      await lab.host.exec('iptables', ['-F', 'SOMEONE-ELSE']);
      await lab.host.exec('iptables', ['-X', 'SOMEONE-ELSE']);
      const again = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
      expect(again.exitCode, again.stderr).toBe(0);
      expect((await ipsetEntries(lab.host)).length).toBe(200);
      expect(lastReport(sim).code).toBe(0);
      expect((await runCli(['flush', '--config', cfg.path])).exitCode).toBe(0);
    } finally {
      sim.setAgentConfig(sim.agid, { ...AGENT_CONFIG });
      rmSync(cfg.dir, { recursive: true, force: true });
    }
  });
});

describe('nftables backend: a failed apply keeps the kernel as it was', () => {
  let sim: Simulator;
  let ns: Netns;
  let holder: ResultPromise | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 2000, seed: 32, agentConfig: { ...AGENT_CONFIG } });
    ns = await Netns.create();
  });
  afterAll(async () => {
    holder?.kill('SIGKILL');
    await holder?.catch(() => undefined);
    await ns?.destroy();
    await sim?.close();
  });

  it('a table of the agent’s name owned by another process: not the agent’s, exit 4, code 32, nothing changed', async () => {
    // `flags owner`: only the process that created the table (its netlink socket) may change it.
    holder = execa('ip', ['netns', 'exec', ns.name, 'nft', '-i'], { reject: false, stdin: 'pipe', stdout: 'ignore', stderr: 'ignore' });
    holder.stdin!.write(
      'add table inet wcf_agent { flags owner; }\n' +
        'add set inet wcf_agent wcf-blocklist { type ipv4_addr; flags interval,timeout; }\n' +
        `add element inet wcf_agent wcf-blocklist { ${ADDR.allowed} }\n`,
    );
    await waitFor(async () => (await ns.exec('nft', ['list', 'ruleset'])).includes(ADDR.allowed), 'the owned table', 10_000);
    const before = await snapshot(ns);

    const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: ns.name, retries: 0 });
    try {
      const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(4);
      const out = parseSync(r);
      // Unmarked and not the agent's shape: refused as someone else's before any write.
      expect(out.code).toBe(32);
      expect(out.error).toBe('WCF_ERR_NOT_OWNED');
      expect(out.message).toMatch(/^nft table inet wcf_agent exists and was not created by wcf-agent/);
      expect(lastReport(sim)).toMatchObject({ code: 32, plugin: 'nftables', blacklist: [] });
      expect(await snapshot(ns)).toEqual(before);
    } finally {
      rmSync(cfg.dir, { recursive: true, force: true });
    }
  });
});

describe('plugin "auto" in a namespace', () => {
  let sim: Simulator;
  let ns: Netns;
  let shims: string | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 500, seed: 33, agentConfig: { ...AGENT_CONFIG } });
    ns = await Netns.create();
  });
  afterAll(async () => {
    await ns?.destroy();
    await sim?.close();
    if (shims) rmSync(shims, { recursive: true, force: true });
  });

  const autoSync = async (env: Record<string, string> = {}) => {
    const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'auto', netns: ns.name, retries: 0 });
    try {
      const r = await runCli(['sync', '--once', '--json', '--config', cfg.path], env);
      expect(r.exitCode, r.stderr).toBe(0);
      const logs = r.stderr
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string; plugin?: string });
      const flushed = await runCli(['flush', '--config', cfg.path], env);
      expect(flushed.exitCode, flushed.stderr).toBe(0);
      return { out: parseSync(r), logs };
    } finally {
      rmSync(cfg.dir, { recursive: true, force: true });
    }
  };

  it('picks nftables where nft works, says so in the log, and reports it', async () => {
    const { out, logs } = await autoSync();
    expect(logs.find((l) => /plugin auto-detected/.test(l.msg))).toMatchObject({ msg: 'plugin auto-detected: nftables', plugin: 'nftables' });
    expect(out.plugin).toBe('nftables');
    expect(lastReport(sim).plugin).toBe('nftables');
    expect(lastReport(sim).blacklist.length).toBe(out.applied);
    expect(out.applied).toBeGreaterThan(0);
  });

  it('falls back to ipset when nft does not work, and reports ipset', async () => {
    // An `nft` that fails, found first on PATH (ip netns exec looks commands up on PATH).
    shims = mkdtempSync(join(tmpdir(), 'wcf-shim-'));
    writeFileSync(join(shims, 'nft'), '#!/bin/sh\necho "nft: simulated missing kernel support" >&2\nexit 1\n');
    chmodSync(join(shims, 'nft'), 0o755);
    const { out, logs } = await autoSync({ PATH: `${shims}:${process.env.PATH ?? ''}` });
    expect(logs.find((l) => /plugin auto-detected/.test(l.msg))).toMatchObject({ msg: 'plugin auto-detected: ipset', plugin: 'ipset' });
    expect(out.plugin).toBe('ipset');
    expect(lastReport(sim).plugin).toBe('ipset');
  });
});
