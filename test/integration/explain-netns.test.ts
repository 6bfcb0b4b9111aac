import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';
import { ADDR, createLab, isRoot, type Lab } from '../netns/netns.js';
import { kernelSet } from '../netns/relay.js';

/**
 * `explain` against real netfilter: the agent (built CLI, outside) applies its rules inside a
 * test namespace (config `netns`), whose default gateway and resolver the feed lists with top
 * scores. Root is required: without it these fail loudly rather than being skipped.
 */

const GATEWAY = '198.18.4.1';
const RESOLVER = '198.18.4.53';
const THRESHOLD = 4;

interface ExplainJson {
  blocked: boolean;
  verdict: string;
  rule: { record: string | null; protected_by: { ip: string; source: string; detail: string | null } | null };
  records: { ip: string; below_threshold_at: number | null }[];
  in_kernel: boolean | null;
  kernel: { plugin: string; entries: { ip: string; timeout: number | null; timeout_known: boolean }[]; error: string | null };
  generated_at: number;
}

describe.each(['nftables', 'ipset'] as const)('explain with the %s backend', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  let cfg: { path: string; dir: string };
  let etcDir: string | undefined;

  const explain = async (address: string) => {
    const r = await runCli(['explain', address, '--json', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as ExplainJson;
  };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 200, seed: 29, agentConfig: { maximum_rules: '500', score_threshold: String(THRESHOLD), sync_time: '5', running: 'true' } });
    lab = await createLab();
    await lab.host.exec('ip', ['route', 'add', 'default', 'via', GATEWAY]);
    etcDir = join('/etc/netns', lab.host.name);
    mkdirSync(etcDir, { recursive: true });
    writeFileSync(join(etcDir, 'resolv.conf'), `nameserver ${RESOLVER}\n`);
    for (const ip of [ADDR.blocked, GATEWAY, RESOLVER, ADDR.host]) sim.upsertIndicator({ ip, score: 9.9 });
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: lab.host.name, retries: 0 });
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
  });
  afterAll(async () => {
    if (etcDir) rmSync(etcDir, { recursive: true, force: true });
    await lab?.destroy();
    await sim?.close();
    if (cfg) rmSync(cfg.dir, { recursive: true, force: true });
  });

  it('a blocked address: in the kernel, with the remaining timeout the kernel reports', async () => {
    expect(await kernelSet(lab.host, plugin)).toContain(ADDR.blocked);
    const e = await explain(ADDR.blocked);
    expect(e).toMatchObject({ blocked: true, verdict: 'score', in_kernel: true });
    expect(e.kernel.plugin).toBe(plugin);
    expect(e.kernel.error).toBeNull();
    expect(e.kernel.entries).toHaveLength(1);
    const k = e.kernel.entries[0]!;
    expect(k).toMatchObject({ ip: ADDR.blocked, timeout_known: true });
    // The kernel's countdown (hours for a fresh 9.9) ends when the score falls below the threshold,
    // to the second it was rounded to: not a permanent entry, nor one about to go.
    const left = e.records[0]!.below_threshold_at! - e.generated_at;
    expect(left).toBeGreaterThan(3600);
    expect(k.timeout!).toBeLessThanOrEqual(left + 2);
    expect(k.timeout!).toBeGreaterThan(left / 2);
  });

  it('the gateway, the resolver and the namespace’s own address: protected, naming the source', async () => {
    for (const [ip, source] of [[GATEWAY, 'gateway'], [RESOLVER, 'resolver'], [ADDR.host, 'own_address']] as const) {
      const e = await explain(ip);
      expect(e, ip).toMatchObject({ blocked: false, verdict: 'protected', in_kernel: false });
      expect(e.rule.protected_by, ip).toMatchObject({ ip, source });
    }
    const set = await kernelSet(lab.host, plugin);
    for (const ip of [GATEWAY, RESOLVER, ADDR.host]) expect(set).not.toContain(ip);
  });

  it('the first line is what holds on this host, local overrides included (as `blocked` in --json); the feeds\' own verdict second', async () => {
    const text = async (address: string) => {
      const r = await runCli(['explain', address, '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(0);
      return r.stdout.split('\n');
    };
    const cli = async (...args: string[]) => {
      const r = await runCli([...args, '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(0);
    };
    // Blocked by the feed, allowed here: out of the kernel.
    await cli('allow', ADDR.blocked);
    try {
      expect(await kernelSet(lab.host, plugin)).not.toContain(ADDR.blocked);
      const lines = await text(ADDR.blocked);
      expect(lines[0]).toBe(`${ADDR.blocked}: not blocked (local allow)`);
      expect(lines[1]).toBe('  feeds:  BLOCKED (score)');
      expect(lines).toContain(`  kernel: not held (${plugin})`);
      expect(await explain(ADDR.blocked)).toMatchObject({ blocked: false, feed_blocked: true, verdict: 'score', in_kernel: false });
    } finally {
      await cli('overrides', 'remove', ADDR.blocked);
    }
    expect((await text(ADDR.blocked))[0]).toBe(`${ADDR.blocked}: BLOCKED (score)`);
    // In no feed, blocked here: in the kernel.
    const absent = ADDR.other;
    expect(await explain(absent)).toMatchObject({ blocked: false, verdict: 'not_in_feed' });
    await cli('block', absent, '--for', '1h');
    try {
      expect(await kernelSet(lab.host, plugin)).toContain(absent);
      const lines = await text(absent);
      expect(lines[0]).toBe(`${absent}: BLOCKED (local block)`);
      expect(lines[1]).toBe('  feeds:  not blocked (not_in_feed)');
      expect(lines.some((l) => l.startsWith(`  kernel: held (${plugin}): ${absent}`))).toBe(true);
      expect(await explain(absent)).toMatchObject({ blocked: true, feed_blocked: false, verdict: 'not_in_feed', in_kernel: true });
    } finally {
      await cli('overrides', 'remove', absent);
    }
    expect((await text(absent))[0]).toBe(`${absent}: not blocked (not_in_feed)`);
  });

  it('after flush: still selected, no longer in the kernel', async () => {
    const f = await runCli(['flush', '--config', cfg.path]);
    expect(f.exitCode, f.stderr).toBe(0);
    expect(await explain(ADDR.blocked)).toMatchObject({ blocked: true, verdict: 'score', in_kernel: false, kernel: { entries: [], error: null } });
  });
});
