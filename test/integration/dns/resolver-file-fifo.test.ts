import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot, Netns } from '../../netns/netns.js';

/**
 * A FIFO where the agent's resolver file should be (unbound_conf_file, rpz_file) must not hang
 * the agent: a plain read of a FIFO blocks until someone writes to it, which nobody does. The
 * command fails at once naming the file, and the FIFO is left as it is. No resolver is needed:
 * the file is read before any resolver command runs (the firewall part runs in a namespace of
 * the test's: with the dry-run firewall backend the resolver is not written either). `timeout`
 * ends a hung command (it fails the test instead of hanging the suite).
 */

describe('a FIFO at the resolver file', () => {
  let sim: Simulator;
  let dir: string;
  let ns: Netns;

  beforeAll(async () => {
    if (!isRoot) throw new Error('this test needs root to create a network namespace');
    ns = await Netns.create();
    sim = await startSimulator({ indicators: 5, urls: 0, seed: 31 });
    sim.upsertUrl('http://evil-site.example/a', { score: 9, ts: sim.clock.now(), tags: ['blacklisted'] });
    dir = mkdtempSync(join(tmpdir(), 'wcf-fifo-'));
  });
  afterAll(async () => {
    await sim?.close();
    await ns?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['unbound', 'unbound_conf_file', { unbound_control: ['unbound-control', '-c', '/nonexistent/unbound.conf'] }],
    ['rpz', 'rpz_file', { rpz_reload: ['true'] }],
  ] as const)('%s: sync and flush fail at once naming the FIFO', async (plugin, key, extra) => {
    const fifo = join(dir, `${plugin}.fifo`);
    await execa('mkfifo', [fifo]);
    const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: ns.name, retries: 0, url_feed: true, dns_plugin: plugin, [key]: fifo, ...extra });
    for (const args of [['sync', '--once'], ['flush']]) {
      const r = await runCli([...args, '--config', cfg.path], {}, ['timeout', '-s', 'KILL', '60']);
      expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(4);
      expect(r.stderr).toContain(fifo);
      expect(r.stderr).toMatch(/FIFO/);
    }
    expect(statSync(fifo).isFIFO()).toBe(true);
  }, 150_000);
});
