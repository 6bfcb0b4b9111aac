import { describe, expect, it } from 'vitest';
import { hitCountersFor } from '../../../../src/agent/inspect/explain.js';
import type { FirewallPlugin, HitCounter } from '../../../../src/firewall/index.js';

/** A backend whose kernel counted these hits (as nft's and ipset's per-address hits sets report them). */
const backend = (hits: HitCounter[], name: FirewallPlugin['name'] = 'nftables'): FirewallPlugin => ({
  name,
  apply: () => Promise.reject(new Error('explain never writes')),
  list: () => Promise.resolve([]),
  flush: () => Promise.reject(new Error('explain never writes')),
  readCounters: () => Promise.resolve({ packets: 0, bytes: 0 }),
  readHits: () => Promise.resolve(hits),
  objects: () => Promise.resolve([]),
});

describe('explain: the hit counters of the entries covering an address', () => {
  it('sums, per direction, the hits on every address inside the covering entries, and nothing else', async () => {
    const hits: HitCounter[] = [
      { ip: '198.51.100.7', side: 'out', packets: 3, bytes: 180 },
      { ip: '198.51.100.9', side: 'out', packets: 2, bytes: 120 },
      { ip: '198.51.100.9', side: 'in', packets: 1, bytes: 60 },
      { ip: '203.0.113.5', side: 'in', packets: 50, bytes: 3000 }, // another indicator
    ];
    expect(await hitCountersFor(backend(hits), [{ cidr: '198.51.100.0/24', timeoutSeconds: 60 }])).toEqual([
      { direction: 'in', packets: 1, bytes: 60 },
      { direction: 'out', packets: 5, bytes: 300 },
    ]);
    // Not held by the kernel: nothing counts.
    expect(await hitCountersFor(backend(hits), [])).toEqual([
      { direction: 'in', packets: 0, bytes: 0 },
      { direction: 'out', packets: 0, bytes: 0 },
    ]);
  });

  it('not available with the dry-run backend or when the counters cannot be read', async () => {
    expect(await hitCountersFor(backend([], 'dry-run'), [])).toBeUndefined();
    const broken = { ...backend([]), readHits: () => Promise.reject(new Error('Operation not permitted')) };
    expect(await hitCountersFor(broken, [{ cidr: '198.51.100.0/24', timeoutSeconds: null }])).toBeUndefined();
  });
});
