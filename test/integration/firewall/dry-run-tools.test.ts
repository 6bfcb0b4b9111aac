import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DryRunPlugin } from '../../../src/firewall/dry-run.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { ADDR, Netns, destroyAll } from '../../netns/netns.js';
import { CAP, NAMES, fillers, net, options, sortedCidrs } from './common.js';
import { ipsetEntries, nftElements } from './kernel.js';

/**
 * What the dry run writes is what the kernel backends would load: each file is
 * handed to the real tool inside a throwaway namespace, which must accept it
 * and then hold exactly the entries rendered.
 */
/** The dry run must not run any command itself. */
const noCommands: CommandRunner = {
  run: async (file) => {
    throw new Error(`dry-run ran ${file}`);
  },
};

describe('dry-run output is accepted by the real tools', () => {
  let dir: string;
  const entries = [...fillers(50, 600), { cidr: net(ADDR.net24) }, { cidr: net('192.0.2.0/24'), timeoutSeconds: 300 }, { cidr: net('192.0.2.7') }];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wcf-dry-tools-'));
  });
  afterAll(async () => {
    await destroyAll();
    await rm(dir, { recursive: true, force: true });
  });

  it('the nft script passes `nft -c` and, loaded, holds the entries (overlaps resolved)', async () => {
    const out = join(dir, 'dry.nft');
    const p = new DryRunPlugin(options(noCommands, { dryRunOutput: out, dryRunFormat: 'nft' }));
    await p.apply(entries, CAP);
    const text = await readFile(out, 'utf8');
    const ns = await Netns.create();
    await ns.exec('nft', ['-c', '-f', '-'], text);
    await ns.exec('nft', ['-f', '-'], text);
    const kernel = [...(await nftElements(ns)).keys()];
    expect(sortedCidrs(kernel.map((k) => ({ cidr: net(k) })))).toEqual(await p.list());
    // The permanent /32 inside the timed /24 sits in the addresses' set, the /24 in the networks'
    // set: neither set overlaps itself, and 192.0.2.7 stays blocked when the /24 times out.
    expect(kernel).toContain('192.0.2.7');
    expect(kernel).toContain('192.0.2.0/24');
    expect((await nftElements(ns)).get('192.0.2.7')).toEqual({});
  });

  it('the ipset text loads with `ipset restore` and holds exactly the entries', async () => {
    const out = join(dir, 'dry.ipset');
    const p = new DryRunPlugin(options(noCommands, { dryRunOutput: out, dryRunFormat: 'ipset' }));
    await p.apply(entries, CAP);
    const ns = await Netns.create();
    await ns.exec('ipset', ['restore'], await readFile(out, 'utf8'));
    const kernel = await ipsetEntries(ns);
    expect(sortedCidrs([...kernel.keys()].map((k) => ({ cidr: net(k) })))).toEqual(sortedCidrs(entries));
    expect(kernel.get(ADDR.net24)).toBe(0);
    expect(kernel.get('192.0.2.0/24')).toBeGreaterThan(290);
    expect((await ns.exec('ipset', ['list', NAMES.setName, '-t'])).match(/maxelem (\d+)/)?.[1]).toBe('65536');
  });
});
