import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsRunner } from '../../../src/dns/exec.js';
import { parseUnboundInclude } from '../../../src/dns/render.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { createUnboundPlugin } from '../../../src/dns/unbound/plugin.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * unbound: every name the agent adds to the running resolver must stay recorded as its own,
 * so that the agent (a later cycle, `flush`) can remove it, even when the include file cannot
 * be written. The include file lives on a small tmpfs of the test's own (mounted on a temp dir,
 * unmounted afterwards) that the test fills up: a real ENOSPC, as on a full /etc.
 */

const RECORDS: Record<string, string> = {
  'evil-site.example': '198.18.0.10',
  'new-evil.example': '198.18.0.11',
  'third.example': '198.18.0.12',
  'fourth.example': '198.18.0.13',
};

/** Fill the filesystem at `dir` until a write fails with ENOSPC. */
function fill(dir: string): void {
  const fd = openSync(join(dir, 'filler'), 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    // The last partial page too.
    try {
      for (;;) writeSync(fd, chunk, 0, 1);
    } catch {
      /* full */
    }
  } finally {
    closeSync(fd);
  }
}
const free = (dir: string) => rmSync(join(dir, 'filler'), { force: true });

describe('unbound: names the agent added are never orphaned when the include file cannot be written', () => {
  let sim: Simulator;
  let lab: ResolverLab;
  let blocks: string;
  let mounted = false;
  let include: string;
  let cfg: { path: string; dir: string };
  let zonesBefore: string[];
  const sync = () => runCli(['sync', '--once', '--config', cfg.path]);
  const agentZones = async () => (await lab.localZones()).filter((z) => !zonesBefore.includes(z));

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root (namespaces, mount)');
    blocks = mkdtempSync(join(tmpdir(), 'wcf-blocks-'));
    await execa('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0755', 'wcf-test-blocks', blocks]);
    mounted = true;
    include = join(blocks, 'wcf-agent.conf');
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 29, agentConfig: { score_threshold: '4' } });
    sim.upsertUrl('http://evil-site.example/a', { score: 9, ts: sim.clock.now() });
    lab = await createResolverLab({ records: RECORDS, serverLines: [`include: "${blocks}/*.conf"`] });
    zonesBefore = await lab.localZones();
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, url_feed: true, dns_plugin: 'unbound', unbound_control: lab.control, unbound_conf_file: include });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
    if (mounted) await execa('umount', [blocks]);
    if (blocks) rmSync(blocks, { recursive: true, force: true });
  });

  it('ENOSPC before the resolver is touched: the cycle fails with the previous blocks in force, nothing new half-added', async () => {
    const first = await sync();
    expect(first.exitCode, first.stderr).toBe(0);
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    sim.upsertUrl('http://new-evil.example/a', { score: 9, ts: sim.clock.now() });
    fill(blocks);
    try {
      const r = await sync();
      expect(r.exitCode).toBe(4);
      expect(r.stderr).toMatch(/ENOSPC|no space/i);
    } finally {
      free(blocks);
    }
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.answers('new-evil.example')).toEqual([RECORDS['new-evil.example']]);
    // Whatever unbound holds now, the include file names it all: nothing the agent cannot find again.
    const recorded = parseUnboundInclude(readFileSync(include, 'utf8'));
    for (const z of await agentZones()) expect(recorded, z).toContain(z.replace(/\.\s.*$/, ''));
  });

  it('flush afterwards removes every name the agent added, and nothing else', async () => {
    const r = await runCli(['flush', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await lab.localZones()).toEqual(zonesBefore);
    for (const n of ['evil-site.example', 'new-evil.example']) expect(await lab.answers(n), n).toEqual([RECORDS[n]]);
  });

  it('ENOSPC after the resolver was changed (the final write): the names stay recorded, flush removes them all', async () => {
    const base = createDnsRunner();
    // The real unbound-control; the filesystem fills up the moment the zones were added.
    const runner: CommandRunner = {
      async run(file, args, options) {
        const out = await base.run(file, args, options);
        if (args.at(-1) === 'local_zones') fill(blocks);
        return out;
      },
    };
    const plugin = createUnboundPlugin({ control: lab.control, confFile: include, answer: { action: 'nxdomain' }, runner, logger: pino({ level: 'silent' }) });
    try {
      await expect(plugin.apply(['third.example', 'fourth.example'])).rejects.toThrow(/ENOSPC|no space/i);
    } finally {
      free(blocks);
    }
    // Added to the running unbound, and recorded as the agent's.
    expect(await lab.status('third.example')).toBe('NXDOMAIN');
    expect(parseUnboundInclude(readFileSync(include, 'utf8'))).toEqual(expect.arrayContaining(['third.example', 'fourth.example']));
    const r = await runCli(['flush', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await lab.localZones()).toEqual(zonesBefore);
    expect(await lab.answers('third.example')).toEqual([RECORDS['third.example']]);
  });
});
