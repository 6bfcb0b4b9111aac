import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilSets, type KernelSets } from '../../scripts/bench/peers.js';
import { isRoot, Netns } from '../netns/netns.js';

/**
 * The peers benchmark's wait for an enforcer's kernel sets (scripts/bench/peers.ts): the agent
 * keeps addresses and networks in two sets, and a wait that looked at one of them never ended.
 */

let ns: Netns;
beforeAll(async () => {
  if (!isRoot) throw new Error('the peers benchmark test needs root (a network namespace with nftables)');
  ns = await Netns.create();
  await ns.exec('nft', ['-f', '-'], [
    'table inet wcf_agent {',
    '  set wcf-blocklist { type ipv4_addr; elements = { 192.0.2.1, 192.0.2.2, 192.0.2.3 } }',
    '  set wcf-blocklist-net { type ipv4_addr; flags interval; elements = { 198.51.100.0/24, 203.0.113.0/25 } }',
    '}',
  ].join('\n'));
});
afterAll(async () => {
  await ns?.destroy();
});

const kernel = (): KernelSets => ({ ns: ns.name, family: 'inet', table: 'wcf_agent', sets: ['wcf-blocklist', 'wcf-blocklist-net'] });
const wait = (o: { want: number; failed?: () => Error | undefined; deadlineMs?: number }) =>
  untilSets({ who: 'wcf-agent 5', kernel: kernel(), want: () => o.want, failed: o.failed, t0: performance.now(), pollMs: 20, deadlineMs: o.deadlineMs ?? 10_000, alive: () => true });

describe('peers benchmark: waiting for the kernel sets', () => {
  it('counts the addresses and the networks (both sets)', async () => {
    await expect(wait({ want: 5 })).resolves.toBeGreaterThanOrEqual(0);
  });

  it('fails loudly at its deadline, with what the sets hold', async () => {
    await expect(wait({ want: 6, deadlineMs: 200 })).rejects.toThrow(/^wcf-agent 5 \(wcf_agent: wcf-blocklist \+ wcf-blocklist-net\): deadline of 0 s passed; 5 of 6 in the sets after 0 s$/);
  });

  it('fails at once when the enforcer’s first cycle failed', async () => {
    await expect(wait({ want: 6, failed: () => new Error('daemon: sync failed') })).rejects.toThrow(/: daemon: sync failed; 5 of 6 in the sets after 0 s$/);
  });
});
