import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectsCheck } from '../../../src/cli/doctor/firewall-checks.js';
import { createPlugin } from '../../../src/firewall/index.js';
import type { FirewallPlugin, PluginName } from '../../../src/firewall/plugin.js';
import { ADDR, createLab, destroyAll, type Lab } from '../../netns/netns.js';
import { CAP, net, options } from '../firewall/common.js';

/**
 * The metrics' drop counters and doctor's object check against real netfilter,
 * in throwaway namespaces (never the root namespace): before the first apply
 * (absent: zero / warn), then after blocked traffic (counted / ok).
 */
describe('drop counters and owned objects on real netfilter', () => {
  let lab: Lab;
  beforeAll(async () => {
    lab = await createLab();
  });
  afterAll(async () => {
    await destroyAll();
  });

  it.each(['nftables', 'ipset', 'iptables'] as const)('%s', async (name: PluginName) => {
    const runner = lab.host.runner();
    const plugin: FirewallPlugin = createPlugin(name, options(runner));
    try {
      expect(await plugin.readCounters()).toEqual({ packets: 0, bytes: 0 });
      expect(await objectsCheck(plugin)).toMatchObject({ status: 'warn', message: expect.stringMatching(/not created yet/) });

      await plugin.apply([{ cidr: net(ADDR.blocked) }, { cidr: net('192.0.2.0/24'), timeoutSeconds: 600 }], CAP);
      expect(await objectsCheck(plugin)).toMatchObject({ status: 'ok' });
      expect(await plugin.readCounters()).toEqual({ packets: 0, bytes: 0 });

      expect(await lab.connect(ADDR.blocked, 800)).toBe('timeout');
      expect(await lab.connect(ADDR.allowed)).toBe('connected');
      const c = await plugin.readCounters();
      expect(c.packets).toBeGreaterThanOrEqual(1); // SYN and its retransmissions
      expect(c.bytes).toBeGreaterThanOrEqual(c.packets * 40);
    } finally {
      await plugin.flush();
    }
    expect(await plugin.readCounters()).toEqual({ packets: 0, bytes: 0 });
  });
});
