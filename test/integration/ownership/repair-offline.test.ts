import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { ADDR, createLab, isRoot, type Lab } from '../../netns/netns.js';

/**
 * Repair without the API, on real netfilter in a test namespace (config
 * `netns`): a firewall reload removes the agent's hooks while the API answers
 * 503. `status` must not say "enforcing" meanwhile, and the next `sync --once`
 * puts the hooks back from the last applied set although its pull fails.
 */

interface StatusJson {
  owned: { plugin: string; objects: string[] } | null;
  enforcing: boolean | null;
  firewall: { objects: Array<{ what: string; state: string }> };
}

const BACKENDS = [
  {
    plugin: 'ipset',
    // What `iptables -F` in a firewall reload does: every rule goes, the agent's hooks and its chain's rules too.
    removeHooks: (lab: Lab) => lab.host.exec('iptables', ['-F']),
    gone: /iptables hook INPUT -> WCF-AGENT/,
    owned: ['ipset set wcf-blocklist', 'iptables chain WCF-AGENT'],
  },
  {
    plugin: 'nftables',
    removeHooks: async (lab: Lab) => {
      await lab.host.exec('nft', ['delete', 'chain', 'inet', 'wcf_agent', 'prerouting']);
    },
    gone: /nft chain inet wcf_agent prerouting/,
    owned: ['nft table inet wcf_agent'],
  },
] as const;

describe.each(BACKENDS)('$plugin: hooks removed while the API is down', ({ plugin, removeHooks, gone, owned }) => {
  let sim: Simulator;
  let lab: Lab;
  let cfg: { path: string; dir: string };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 200, seed: 17, agentConfig: { maximum_rules: '20', score_threshold: '4', sync_time: '5', running: 'true' } });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    lab = await createLab();
    // Inbound only: removing the input-side hooks is then enough to let the listed address through.
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: lab.host.name, retries: 0, direction: 'inbound' });
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
    if (cfg) rmSync(cfg.dir, { recursive: true, force: true });
  });

  const status = async (): Promise<{ json: StatusJson; text: string }> => {
    const j = await runCli(['status', '--json', '--config', cfg.path]);
    expect(j.exitCode, j.stderr).toBe(0);
    const t = await runCli(['status', '--config', cfg.path]);
    expect(t.exitCode, t.stderr).toBe(0);
    return { json: JSON.parse(j.stdout) as StatusJson, text: /^enforcing\s+(.*)$/m.exec(t.stdout)?.[1] ?? t.stdout };
  };

  it('are back after the next sync although its pull fails; status says not enforcing while they are gone', async () => {
    const first = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    const healthy = (await status()).json;
    expect(healthy.enforcing).toBe(true);
    // The state records what the agent created and marked as its own.
    expect(healthy.owned).toMatchObject({ plugin, objects: owned });

    await removeHooks(lab);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
    const during = await status();
    expect(during.json.enforcing).toBe(false);
    expect(during.json.firewall.objects.filter((o) => o.state === 'absent').map((o) => o.what).join('; ')).toMatch(gone);
    expect(during.text).toMatch(/^no \(missing from the kernel: /);

    sim.setFault('http500', { status: 503, message: 'service unavailable' });
    try {
      const r = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(3);
      const out = JSON.parse(r.stdout) as { code: number; changes: { repaired: string[] } | null };
      expect(out.code).toBe(22);
      expect(r.stderr).toMatch(/re-asserted the last applied set/);
      // One repair, one warning (not the plugin's own line as well).
      expect(r.stderr.match(/re-asserted the last applied set|have been re-created/g)).toHaveLength(1);
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
      const after = await status();
      expect(after.json.enforcing).toBe(true);
      expect(after.text).toMatch(/^yes \(\d+ entries in the kernel\)$/);
    } finally {
      sim.setFault(null);
    }
  });
});
