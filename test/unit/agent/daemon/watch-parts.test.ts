import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { AppliedMemory } from '../../../../src/agent/state/applied-memory.js';
import { FREE_REPAIRS, GAP_FAST_MS, GAP_SLOW_MS, QUIET_MS, RepairGuard, SLOW_AFTER } from '../../../../src/agent/daemon/repair-backoff.js';
import { relevantEvent, type FirewallPlugin } from '../../../../src/firewall/index.js';
import { toCidr } from '../../../../src/net/ipv4.js';

const NAMES = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' };

describe('flapping guard', () => {
  it('lets the first repairs through at once, then one per 10 s, then one a minute, and says so once', () => {
    const g = new RepairGuard();
    let t = 1_000_000;
    for (let i = 0; i < FREE_REPAIRS; i++) {
      expect(g.waitMs(t)).toBe(0);
      g.repaired(t);
      t += 1000;
    }
    expect(g.waitMs(t)).toBe(GAP_FAST_MS - 1000);
    expect(g.tellOnce()).toBe(true);
    expect(g.tellOnce()).toBe(false);
    for (let i = FREE_REPAIRS; i < SLOW_AFTER; i++) {
      t += g.waitMs(t);
      g.repaired(t);
    }
    expect(g.waitMs(t)).toBe(GAP_SLOW_MS);
  });

  it('a quiet spell ends the fight: the next repair is immediate and a new fight is told again', () => {
    const g = new RepairGuard();
    let t = 0;
    for (let i = 0; i < SLOW_AFTER; i++) {
      t += g.waitMs(t);
      g.repaired(t);
    }
    expect(g.tellOnce()).toBe(true);
    t += QUIET_MS;
    expect(g.waitMs(t)).toBe(0);
    g.repaired(t);
    expect(g.tellOnce()).toBe(true);
  });
});

describe('the applied set kept in memory', () => {
  const plugin = (): FirewallPlugin => ({
    name: 'nftables',
    apply: () => Promise.resolve({ added: 0, removed: 0, updated: 0, mode: 'none', repaired: [] }),
    list: () => Promise.resolve([]),
    flush: () => Promise.resolve(),
    readCounters: () => Promise.resolve({ packets: 0, bytes: 0 }),
    readHits: () => Promise.resolve([]),
    objects: () => Promise.resolve([]),
    check: () => Promise.resolve({ missing: ['x'] }),
  });

  it('counts timeouts down from the apply (never longer), drops expired entries, keeps permanent ones', async () => {
    // Fake time: the apply is recorded at exactly t0 however busy the machine (the checks below are to the second).
    const t0 = 1_800_000_000_000;
    vi.useFakeTimers({ now: t0, toFake: ['Date'] });
    onTestFinished(() => void vi.useRealTimers());
    const memory = new AppliedMemory();
    const p = memory.wrap(plugin());
    expect(memory.entriesNow(Date.now())).toBeUndefined();
    await p.apply(
      [
        { cidr: toCidr('198.18.0.1')!, timeoutSeconds: 100 },
        { cidr: toCidr('198.18.0.2')!, timeoutSeconds: 2.5 },
        { cidr: toCidr('198.18.1.0/24')!, timeoutSeconds: undefined },
      ],
      { capacity: 500 },
    );
    expect(memory.lastingCount(t0 + 2000, 5)).toBe(2); // 98 s left, and the permanent one
    expect(memory.lastingCount(t0 + 2000, 98)).toBe(1);
    const later = memory.entriesNow(t0 + 2000)!;
    expect(later.capacity).toBe(500);
    expect(later.entries.toArray().map((e) => [e.cidr.text, e.timeoutSeconds])).toEqual([
      ['198.18.0.1', 98],
      ['198.18.1.0/24', undefined],
    ]);
    for (const e of later.entries.toArray()) if (e.timeoutSeconds !== undefined) expect(e.timeoutSeconds).toBeLessThanOrEqual(100 - 1);
  });

  it('the count of lasting entries, kept for a second, agrees with the entries at every moment as they expire', async () => {
    const t0 = 1_800_000_000_000;
    vi.useFakeTimers({ now: t0, toFake: ['Date'] });
    onTestFinished(() => void vi.useRealTimers());
    const memory = new AppliedMemory();
    const p = memory.wrap(plugin());
    await p.apply(Array.from({ length: 12 }, (_, i) => ({ cidr: toCidr(`198.18.0.${i + 1}`)!, timeoutSeconds: i + 1 })), { capacity: 50 });
    // Every 137 ms over 13 s, asked twice (the second answer from what the first kept).
    for (let ms = 0; ms <= 13_000; ms += 137) {
      const want = memory.entriesNow(t0 + ms)!.entries.length;
      expect(memory.lastingCount(t0 + ms, 0), `at ${ms} ms`).toBe(want);
      expect(memory.lastingCount(t0 + ms, 0), `again at ${ms} ms`).toBe(want);
    }
    // A new apply is counted afresh within the same second.
    await p.apply([{ cidr: toCidr('198.18.9.9')! }], { capacity: 50 });
    expect(memory.lastingCount(t0 + 13_000, 0)).toBe(1);
  });

  it('passes the check through and forgets the set on flush', async () => {
    const memory = new AppliedMemory();
    const p = memory.wrap(plugin());
    expect(await p.check!()).toEqual({ missing: ['x'] });
    await p.apply([{ cidr: toCidr('198.18.0.1')! }], { capacity: 10 });
    await p.flush();
    expect(memory.entriesNow(Date.now())).toBeUndefined();
    expect(memory.lastingCount(Date.now(), 5)).toBeUndefined();
  });
});

describe('which ruleset events concern the agent', () => {
  it('nftables: its own table only', () => {
    const rel = relevantEvent('nftables', NAMES);
    expect(rel('delete table inet wcf_agent')).toBe(true);
    expect(rel('delete chain inet wcf_agent input')).toBe(true);
    expect(rel('add element inet wcf_agent wcf-blocklist { 198.18.0.1 }')).toBe(true);
    expect(rel('delete table inet wcf_agent_other')).toBe(false);
    expect(rel('add table inet someone_else')).toBe(false);
    expect(rel('delete rule ip filter INPUT handle 3')).toBe(false);
  });

  it('ipset and iptables: the ip filter table (chain and hooks), not other tables', () => {
    const rel = relevantEvent('ipset', NAMES);
    expect(rel('delete rule ip filter INPUT handle 3')).toBe(true);
    expect(rel('delete table ip filter')).toBe(true);
    expect(rel('add rule ip nat POSTROUTING masquerade')).toBe(false);
    expect(rel('add table inet someone_else')).toBe(false);
  });
});
