import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectsCheck } from '../../../src/cli/doctor/firewall-checks.js';
import type { AgentConfig } from '../../../src/config/load.js';
import { createPlugin } from '../../../src/firewall/index.js';
import type { FirewallPlugin, PluginName } from '../../../src/firewall/types.js';
import { readDropCounters } from '../../../src/metrics/counters.js';
import { ADDR, createLab, destroyAll, type Lab } from '../../netns/netns.js';
import { NAMES, options } from '../firewall/common.js';

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
    const cfg = {} as AgentConfig;
    try {
      expect(await readDropCounters(name, NAMES, runner)).toEqual({ packets: 0, bytes: 0 });
      expect(await objectsCheck(name, NAMES, runner, cfg)).toMatchObject({ status: 'warn', message: expect.stringMatching(/not created yet/) });

      await plugin.apply([{ cidr: ADDR.blocked }, { cidr: '192.0.2.0/24', timeoutSeconds: 600 }]);
      expect(await objectsCheck(name, NAMES, runner, cfg)).toMatchObject({ status: 'ok' });
      expect(await readDropCounters(name, NAMES, runner)).toEqual({ packets: 0, bytes: 0 });

      expect(await lab.connect(ADDR.blocked, 800)).toBe('timeout');
      expect(await lab.connect(ADDR.allowed)).toBe('connected');
      const c = await readDropCounters(name, NAMES, runner);
      expect(c.packets).toBeGreaterThanOrEqual(1); // SYN and its retransmissions
      expect(c.bytes).toBeGreaterThanOrEqual(c.packets * 40);
    } finally {
      await plugin.flush();
    }
    expect(await readDropCounters(name, NAMES, runner)).toEqual({ packets: 0, bytes: 0 });
  });
});
