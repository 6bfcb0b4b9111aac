import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { isRoot } from '../../netns/netns.js';
import { kernelSet } from '../../netns/relay.js';
import { createResolverLab, type ResolverLab } from '../dns/resolver-lab.js';

/**
 * `flush` while a daemon runs would print "flushed" and be undone by the daemon's watcher
 * within a second: it is refused (exit 4, naming the daemon and how to stop it), changing
 * nothing in the firewall or at the resolver. Real nftables and a real unbound in a test
 * namespace, the built CLI and daemon. Root required.
 */
const NAME = 'evil-site.example';

describe('flush with a daemon running', () => {
  let sim: Simulator;
  let lab: ResolverLab;
  let dir: string | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 50, urls: 0, seed: 43, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '5', running: 'true' } });
    sim.upsertUrl(`https://${NAME}/a`, { score: 9 });
    lab = await createResolverLab({ records: { [NAME]: '198.18.0.10' } });
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is refused (exit 4, naming the daemon and `systemctl stop wcf-agent`), and the kernel and the resolver still hold everything 15 s later; after a stop it flushes', { timeout: 120_000 }, async () => {
    const c = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, jitter_seconds: 0,
      decision_poll_seconds: 0, url_feed: true, unbound_control: lab.control, unbound_conf_file: lab.includeFile,
    });
    dir = c.dir;
    const d = new DaemonProcess(c.path, { WCF_AGENT_MINUTE_MS: '60000' }); // sync_time 5 minutes: no cycle during the test
    try {
      await d.waitForLog(/^cycle done/);
      await d.waitForLog(/watching the agent’s firewall objects/);
      const set = await kernelSet(lab.ns, 'nftables');
      expect(set.length).toBeGreaterThan(0);
      expect(await lab.status(NAME)).toBe('NXDOMAIN');

      const r = await runCli(['flush', '--config', c.path]);
      expect(r.exitCode, r.stderr).toBe(4);
      expect(r.stderr).toContain(`a wcf-agent daemon (pid ${d.pid}) serves`);
      expect(r.stderr).toContain('nothing was changed. Stop it first (systemctl stop wcf-agent), then run this again');
      expect(r.stderr).not.toContain('flushed');
      const refusedAt = Date.now();
      // What the kernel and the resolver hold, looked at until 15 s after the refusal: never less.
      let looks = 0;
      await waitFor(
        async () => {
          expect(await kernelSet(lab.ns, 'nftables')).toEqual(set);
          expect(await lab.status(NAME)).toBe('NXDOMAIN');
          looks++;
          return Date.now() - refusedAt >= 15_000;
        },
        '15 s after the refused flush',
        30_000,
        500,
      );
      expect(looks).toBeGreaterThan(5);
      expect(d.count(/repair/)).toBe(0); // nothing was there to repair

      expect(await d.stop()).toBe(0); // on_stop keep (the default)
    } finally {
      await d.stop();
    }
    const after = await runCli(['flush', '--config', c.path]);
    expect(after.exitCode, after.stderr).toBe(0);
    expect(after.stderr).toContain('flushed: removed the nftables objects owned by wcf-agent');
    await expect(kernelSet(lab.ns, 'nftables')).rejects.toThrow(/No such file or directory/);
    expect(await lab.answers(NAME)).toEqual(['198.18.0.10']);
  });
});
