import { afterEach, describe, expect, it } from 'vitest';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import { VERIFY_SLICE } from '../../../src/firewall/nft/verify.js';
import { Netns } from '../../netns/netns.js';
import { NAMES, fillers, options, sortedCidrs } from './common.js';
import { nftElements } from './kernel.js';

/**
 * What the nftables verification (check mode, a slice of 20,000 entries at a time) finds, and what
 * the next apply does with it, at small sizes: every slice is looked at, and an entry marked by a
 * verification that is no longer wanted is deleted, not left in the kernel until its timeout.
 */

const CAP = { capacity: 100_000 };
let ns: Netns | undefined;

afterEach(async () => {
  await ns?.destroy();
  ns = undefined;
});

async function plugin(): Promise<NftablesPlugin> {
  ns = await Netns.create();
  // A scope of its own: the record of this table is kept per runner scope and table for the process.
  const runner = { ...ns.runner(), scope: `${ns.name} verify` };
  return new NftablesPlugin(options(runner));
}

const addresses = async () => [...(await nftElements(ns!)).keys()].sort();

describe('the nftables verification and what follows it', () => {
  it('an entry no longer wanted in a slice a verification marked is deleted by the next apply', async () => {
    const p = await plugin();
    const all = fillers(3001, 86_400);
    await p.apply(all, CAP);
    // Another process deletes one address; the verification marks its slice (here, all 3,001).
    await ns!.exec('nft', ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${all[100]!.cidr.text} }`]);
    const found = await p.verify(() => all);
    expect(found.missing).toBeGreaterThan(0);
    // The next selection leaves out another address of that slice: it leaves the kernel, and the deleted one comes back.
    const next = all.filter((_, i) => i !== 200);
    const r = await p.apply(next, CAP);
    expect(r.removed).toBe(1);
    expect(await addresses()).toEqual(sortedCidrs(next).sort());
  });

  it('every slice is looked at: an address deleted from the second slice is found and put back', async () => {
    const p = await plugin();
    const all = fillers(VERIFY_SLICE + 5000, 86_400);
    await p.apply(all, CAP);
    const gone = all[VERIFY_SLICE + 1000]!.cidr.text;
    await ns!.exec('nft', ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, `{ ${gone} }`]);
    const found = await p.verify(() => all);
    expect(found.checked).toBe(all.length);
    expect(found.missing).toBeGreaterThan(0);
    await p.apply(all, CAP);
    expect((await nftElements(ns!)).has(gone)).toBe(true);
    expect((await p.verify(() => all)).missing).toBe(0);
  });
});
