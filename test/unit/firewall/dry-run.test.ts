import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { DryRunPlugin } from '../../../src/firewall/dry-run.js';
import { createPlugin } from '../../../src/firewall/index.js';
import type { PluginOptions } from '../../../src/firewall/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { mustParseCidr } from '../../../src/net/ipv4.js';

const net = (text: string) => mustParseCidr(text, 'test entry');

const noCommands: CommandRunner = {
  run: vi.fn(async () => {
    throw new Error('dry-run must not run commands');
  }),
};

function opts(dryRunOutput: string, dryRunFormat: 'ipset' | 'nft', extra: Partial<PluginOptions> = {}): PluginOptions {
  return {
    names: { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' },
    hookChains: ['INPUT', 'FORWARD'],
    action: 'DROP',
    logBlocked: false,
    logger: pino({ level: 'silent' }),
    runner: noCommands,
    dryRunOutput,
    dryRunFormat,
    ...extra,
  };
}

describe('dry-run plugin', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'wcf-dry-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the ipset restore text, lists it back, runs no command', async () => {
    const file = join(dir, 'sub', 'ruleset.ipset');
    const p = createPlugin('dry-run', opts(file, 'ipset'));
    const r = await p.apply([{ cidr: net('192.0.2.0/24') }, { cidr: net('198.51.100.7'), timeoutSeconds: 300 }], { capacity: 1000 });
    expect(r).toEqual({ added: 2, removed: 0, updated: 0, mode: 'full', repaired: [] });
    const text = await readFile(file, 'utf8');
    expect(text).toMatch(/^# wcf-agent dry-run /);
    expect(text).toContain('#   -A WCF-AGENT ! -i lo ! -o lo -m set --match-set wcf-blocklist src -j DROP');
    expect(text).toContain('#   -A WCF-AGENT -m set --match-set wcf-blocklist dst -j DROP');
    expect(text).toContain('#   -I OUTPUT 1 -j WCF-AGENT');
    expect(text).toContain('create wcf-blocklist hash:net family inet hashsize 1024 maxelem 65536 timeout 0 comment -exist\nflush wcf-blocklist\n');
    expect(text).toContain('add wcf-blocklist 192.0.2.0/24\nadd wcf-blocklist 198.51.100.7 timeout 300\n');
    expect(await p.list()).toEqual(['192.0.2.0/24', '198.51.100.7']);
    expect(await p.apply([{ cidr: net('192.0.2.0/24') }, { cidr: net('198.51.100.7'), timeoutSeconds: 300 }], { capacity: 1000 })).toMatchObject({ mode: 'none' });
    expect(await p.apply([{ cidr: net('192.0.2.0/24') }], { capacity: 1000 })).toMatchObject({ removed: 1, mode: 'full' });
    expect(await readdir(join(dir, 'sub'))).toEqual(['ruleset.ipset']); // no temp files left
    expect(noCommands.run).not.toHaveBeenCalled();
    await p.flush();
    expect(await readdir(join(dir, 'sub'))).toEqual([]);
    expect(await p.list()).toEqual([]);
    await p.flush();
  });

  it('writes the nft script (overlaps resolved) and lists it back', async () => {
    const file = join(dir, 'ruleset.nft');
    const p = new DryRunPlugin(opts(file, 'nft'));
    await p.apply([{ cidr: net('192.0.2.0/24') }, { cidr: net('192.0.2.7'), timeoutSeconds: 10 }, { cidr: net('198.51.100.7'), timeoutSeconds: 300 }], { capacity: 1000 });
    const text = await readFile(file, 'utf8');
    expect(text).toContain('add table inet wcf_agent\ndelete table inet wcf_agent\ntable inet wcf_agent {');
    // Addresses in the hash set, networks in the interval set (the /32 inside the /24 is kept: its own set).
    expect(text).toContain('\t\t\t192.0.2.7 timeout 10s,\n\t\t\t198.51.100.7 timeout 300s\n');
    expect(text).toContain('\t\t\t192.0.2.0/24 . ipv4\n');
    expect(text).toContain('type filter hook prerouting priority -300; policy accept;');
    expect(await p.list()).toEqual(['192.0.2.0/24', '192.0.2.7', '198.51.100.7']);
    // a new instance (agent restart) reads the same file
    expect(await new DryRunPlugin(opts(file, 'nft')).list()).toEqual(['192.0.2.0/24', '192.0.2.7', '198.51.100.7']);
    expect(noCommands.run).not.toHaveBeenCalled();
  });

  it('counts timeouts from when the file was written', async () => {
    const file = join(dir, 'old.ipset');
    const old = Math.floor(Date.now() / 1000) - 100;
    await writeFile(file, `# wcf-agent dry-run x (epoch ${old}): 2 entries\nadd wcf-blocklist 192.0.2.1 timeout 50\nadd wcf-blocklist 192.0.2.2 timeout 400\n`);
    const p = new DryRunPlugin(opts(file, 'ipset'));
    expect(await p.list()).toEqual(['192.0.2.2']);
    expect(await p.apply([{ cidr: net('192.0.2.2'), timeoutSeconds: 300 }], { capacity: 1000 })).toMatchObject({ added: 0, removed: 0, updated: 0, mode: 'none' });
  });

  it('`-` writes to stdout and remembers what it wrote', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(((_c: unknown, cb?: () => void) => {
      cb?.();
      return true;
    }) as typeof process.stdout.write);
    try {
      const p = new DryRunPlugin(opts('-', 'ipset'));
      await p.apply([{ cidr: net('192.0.2.9') }], { capacity: 1000 });
      expect(String(write.mock.calls[0]?.[0])).toContain('add wcf-blocklist 192.0.2.9\n');
      expect(await p.list()).toEqual(['192.0.2.9']);
      await p.flush();
      expect(await p.list()).toEqual([]);
    } finally {
      write.mockRestore();
    }
  });

  it('reports an unwritable output as a FirewallError', async () => {
    await writeFile(join(dir, 'file'), 'x');
    const p = new DryRunPlugin(opts(join(dir, 'file', 'below'), 'ipset'));
    await expect(p.apply([{ cidr: net('192.0.2.9') }], { capacity: 1000 })).rejects.toBeInstanceOf(FirewallError);
  });
});
