import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/** `wcf-agent run` with url_feed: names follow the feed cycle after cycle, and on_stop=flush removes them. */
describe('daemon with url_feed and unbound', () => {
  let sim: Simulator;
  let lab: ResolverLab;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 10, urls: 0, seed: 6, agentConfig: { score_threshold: '4', sync_time: '1' } });
    sim.upsertUrl('https://evil-site.example/a', { score: 9 });
    lab = await createResolverLab({ records: { 'evil-site.example': '198.18.0.10', 'later.example': '198.18.0.11' } });
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('blocks at start, picks up a new URL at a later cycle, removes its names on SIGTERM with on_stop=flush', async () => {
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, jitter_seconds: 0,
      url_feed: true, unbound_control: lab.control, unbound_conf_file: lab.includeFile, on_stop: 'flush',
    });
    // A cycle a second (sync_time 1 "minute" of 1 s): few cycles in flight on a loaded machine.
    const d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '1000' });
    try {
      await d.waitForLog(/resolver blocks applied/);
      expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
      expect(await lab.answers('later.example')).toEqual(['198.18.0.11']);
      sim.upsertUrl('https://later.example/x', { score: 9 });
      const n = d.count(/resolver blocks applied/);
      // n + 2: a cycle already under way when the URL was added may not have it.
      await d.waitForLog(/resolver blocks applied/, n + 2);
      expect(await lab.status('later.example')).toBe('NXDOMAIN');
    } finally {
      // SIGTERM straight to the daemon (not the helper's kill, which turns into SIGKILL after 5 s):
      // a stop waits for the cycle in flight and then flushes, which takes longer on a loaded machine.
      process.kill(d.pid, 'SIGTERM');
      expect(await d.exit()).toBe(0);
    }
    expect(await lab.answers('evil-site.example')).toEqual(['198.18.0.10']);
    expect((await lab.localZones()).some((z) => z.includes('evil-site.example'))).toBe(false);
  });
});
