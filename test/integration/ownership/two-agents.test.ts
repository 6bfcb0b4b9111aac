import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { fastFailConfig, runCli } from '../../helpers/cli.js';
import { Netns, isRoot } from '../../netns/netns.js';

/**
 * Two agents on one host with state of their own (a .deb and a container, both with the default
 * names) must not fight over one table, rewriting it with their own selection every cycle: each
 * marks what it creates with its instance id, and the second refuses the first's objects as it
 * refuses any foreign object (exit 4, reported code 32), leaving them byte-identical. An object
 * marked by an agent from before instance ids is adopted, as before.
 */

const REPORTED_NOT_OWNED = 32;

describe.each(['nftables', 'ipset'] as const)('two agents with separate state on one %s ruleset', (plugin) => {
  let sim: Simulator;
  let ns: Netns;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the ownership tests need root (network namespaces)');
    sim = await startSimulator({ indicators: 300, seed: 3, agentConfig: { maximum_rules: '100', score_threshold: '1', sync_time: '5', running: 'true' } });
    ns = await Netns.create();
  });
  afterEach(async () => {
    await ns.exec('nft', ['flush', 'ruleset']);
    await ns.exec('sh', ['-c', 'ipset destroy 2>/dev/null; true']);
  });
  afterAll(async () => {
    await ns?.destroy();
    await sim?.close();
  });

  /** The ruleset as listed, without the remaining times (they tick between two listings). */
  const ruleset = async () =>
    (plugin === 'nftables' ? await ns.exec('nft', ['list', 'ruleset']) : await ns.exec('ipset', ['save'])).replace(/ (expires|timeout) [0-9dhms.]+/g, '');
  const sync = (path: string) => runCli(['sync', '--config', path]);

  it('the second refuses the first’s objects (exit 4, code 32) and changes nothing; the first goes on owning them', async () => {
    const a = fastFailConfig(sim, { plugin, netns: ns.name });
    const b = fastFailConfig(sim, { plugin, netns: ns.name });
    const first = await sync(a.path);
    expect(first.exitCode, first.stderr).toBe(0);
    const id = readFileSync(join(a.state, 'instance-id'), 'utf8').trim();
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(await ruleset()).toContain(`wcf-agent ${id}`);
    const before = await ruleset();

    const second = await sync(b.path);
    expect(second.exitCode).toBe(4);
    // The log's JSON escapes the quotes around the marker.
    expect(second.stderr).toMatch(new RegExp(`another wcf-agent \\(\\\\?"wcf-agent ${id}\\\\?"\\)`));
    expect(second.stderr).toMatch(/two agents on one host need different names/);
    expect(JSON.parse(readFileSync(join(b.state, 'state.json'), 'utf8')).lastCycle.code).toBe(REPORTED_NOT_OWNED);
    expect(await ruleset()).toBe(before);

    const again = await sync(a.path);
    expect(again.exitCode, again.stderr).toBe(0);
  });

  it('objects marked by an agent from before instance ids (the bare marker) are adopted', async () => {
    const old = fastFailConfig(sim, { plugin, netns: ns.name });
    expect((await sync(old.path)).exitCode).toBe(0);
    const id = readFileSync(join(old.state, 'instance-id'), 'utf8').trim();
    // What an earlier version left: the same objects, marked `wcf-agent` alone.
    if (plugin === 'nftables') {
      const text = (await ns.exec('nft', ['list', 'table', 'inet', 'wcf_agent'])).replaceAll(`wcf-agent ${id}`, 'wcf-agent');
      await ns.exec('nft', ['-f', '-'], `delete table inet wcf_agent\n${text.replace(/^\s*# .*$/gm, '').replace(/ # handle \d+/g, '')}\n`);
    } else {
      await ns.exec('ipset', ['del', 'wcf-blocklist', '255.255.255.255']);
      await ns.exec('ipset', ['add', 'wcf-blocklist', '255.255.255.255', 'nomatch', 'comment', 'wcf-agent']);
    }
    expect(await ruleset()).not.toContain(id);
    const fresh = fastFailConfig(sim, { plugin, netns: ns.name });
    const r = await sync(fresh.path);
    expect(r.exitCode, r.stderr).toBe(0);
  });
});
