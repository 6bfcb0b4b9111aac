import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { createPlugin, createRunner, detectPlugin } from '../../../src/firewall/index.js';
import { Netns, destroyAll, snapshot } from '../../netns/netns.js';
import { CAP, fillers, options } from './common.js';

describe('detectPlugin and createPlugin on real tools', () => {
  let ns: Netns;
  let bin: string;
  beforeAll(async () => {
    ns = await Netns.create();
    bin = await mkdtemp(join(tmpdir(), 'wcf-bin-'));
  });
  afterAll(async () => {
    await destroyAll();
    await rm(bin, { recursive: true, force: true });
  });

  /** A runner whose PATH holds only the given tools (symlinks to the real ones). */
  async function onlyTools(tools: string[]) {
    const dir = await mkdtemp(join(bin, 'p-'));
    for (const t of tools) await symlink(`/usr/sbin/${t}`, join(dir, t));
    return createRunner(['ip', 'netns', 'exec', ns.name, 'env', `PATH=${dir}`]);
  }

  it('picks nftables, then ipset, then iptables, by what works', async () => {
    expect(await detectPlugin(ns.runner())).toBe('nftables');
    expect(await detectPlugin(await onlyTools(['ipset', 'iptables']))).toBe('ipset');
    expect(await detectPlugin(await onlyTools(['iptables']))).toBe('iptables');
    const err = await detectPlugin(await onlyTools([])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as Error).message).toMatch(/nftables: .*nft.*No such file or directory/);
  });

  it('probing changes nothing', async () => {
    const before = await snapshot(ns);
    await detectPlugin(ns.runner());
    expect(await snapshot(ns)).toEqual(before);
  });

  it('createPlugin builds each backend by name', async () => {
    for (const name of ['nftables', 'ipset', 'iptables'] as const) {
      const p = createPlugin(name, options(ns.runner()));
      expect(p.name).toBe(name);
      await p.apply(fillers(3), CAP);
      expect(await p.list()).toHaveLength(3);
      await p.flush();
      expect(await p.list()).toEqual([]);
    }
    expect(createPlugin('dry-run', options(ns.runner(), { dryRunOutput: join(bin, 'x.ipset') })).name).toBe('dry-run');
  });
});
