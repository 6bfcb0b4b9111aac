import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { IPTABLES_WARN_ENTRIES, IptablesPlugin } from '../../../src/firewall/xtables/plugin.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { ADDR, Netns, createLab, destroyAll, snapshot, wrapRunner, type Lab } from '../../netns/netns.js';
import { CAP, NAMES, fillers, net, options, sortedCidrs } from './common.js';
import { chainSources, hookCount, hookRule } from './kernel.js';

describe('iptables plugin on real netfilter', () => {
  let lab: Lab;
  let plugin: IptablesPlugin;
  let opts: ReturnType<typeof options>;
  const base: FirewallEntry[] = [...fillers(20), { cidr: net(ADDR.blocked), timeoutSeconds: 300 }, { cidr: net(ADDR.net24) }];

  beforeAll(async () => {
    lab = await createLab();
    opts = options(lab.host.runner());
    plugin = new IptablesPlugin(opts);
    // What the shared contract suite checks the first apply does (contract.test.ts).
    await plugin.apply(base, CAP);
  });
  afterAll(async () => {
    await destroyAll();
  });

  it('repairs hooks and rules removed by someone else, and reports them', async () => {
    await lab.host.exec('iptables', ['-F', 'INPUT']);
    expect((await plugin.apply(base, CAP)).repaired).toEqual([`hook INPUT -> ${NAMES.chainName}`]);
    expect(await hookCount(lab.host, 'INPUT')).toBe(1);
    await lab.host.exec('iptables', ['-D', NAMES.chainName, '-s', ADDR.blocked, '!', '-i', 'lo', '!', '-o', 'lo', '-j', 'DROP']);
    await lab.host.exec('iptables', ['-A', NAMES.chainName, '-j', 'ACCEPT']);
    const r = await plugin.apply(base, CAP);
    expect(r.repaired).toEqual([`rules of iptables chain ${NAMES.chainName} (differed from expected)`]);
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect(await chainSources(lab.host)).toHaveLength(base.length);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
  });

  it('a failed apply leaves the previous rules in place and throws FirewallError with stderr', async () => {
    const before = await chainSources(lab.host);
    // iptables-restore refuses the whole block (one commit) when one line is bad.
    const corrupt = wrapRunner(lab.host.runner(), ({ file, input }) =>
      file === 'iptables-restore' ? { input: (input ?? '').replace('COMMIT', `-A ${NAMES.chainName} -s 192.0.2.300 -j DROP\nCOMMIT`) } : undefined,
    );
    const err = await new IptablesPlugin(options(corrupt)).apply(fillers(30, undefined, 500), CAP).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as FirewallError).message).toMatch(/iptables-restore/);
    expect((err as FirewallError).stderr).toMatch(/192\.0\.2\.300/);
    expect(await chainSources(lab.host)).toEqual(before);
  });

  it('logs with a rate limit before the action when configured', async () => {
    const p = new IptablesPlugin(options(lab.host.runner(), { logBlocked: true, action: 'REJECT' }));
    await p.apply(base, CAP);
    const rules = (await lab.host.exec('iptables', ['-S', NAMES.chainName])).split('\n').filter((l) => l.startsWith('-A'));
    expect(rules).toHaveLength(1 + base.length * 3);
    expect(rules[0]).toBe(`-A ${NAMES.chainName} -m comment --comment wcf-agent`);
    expect(rules[1]).toMatch(/-m limit --limit 10\/min -j LOG --log-prefix "wcf-agent: "/);
    expect(rules[2]).toMatch(/ -p tcp -j REJECT --reject-with tcp-reset$/);
    expect(rules[3]).toMatch(/ -j REJECT --reject-with icmp-admin-prohibited$/);
    expect(await p.apply(base, CAP)).toMatchObject({ mode: 'none' });
    expect(await lab.connect(ADDR.inNet)).toBe('error:ECONNREFUSED');
    await plugin.apply(base, CAP);
  });

  it(`warns above ${IPTABLES_WARN_ENTRIES} entries`, async () => {
    const o = options(lab.host.runner());
    const p = new IptablesPlugin(o);
    await p.apply(fillers(IPTABLES_WARN_ENTRIES + 1), CAP);
    expect(o.lines.some((l) => l.level === 40 && l.entries === IPTABLES_WARN_ENTRIES + 1)).toBe(true);
    expect(await p.list()).toHaveLength(IPTABLES_WARN_ENTRIES + 1);
  });

  it('flush removes hooks and chain and tolerates their absence', async () => {
    await plugin.flush();
    expect(await lab.host.exec('iptables', ['-S'])).not.toContain(NAMES.chainName);
    expect(await plugin.list()).toEqual([]);
    await plugin.flush();
  });
});

describe('iptables plugin: ownership', () => {
  afterAll(async () => {
    await destroyAll();
  });

  it('flush restores the original ruleset when only INPUT had rules (iptables-nft base chains)', async () => {
    const ns = await Netns.create();
    await ns.exec('iptables', ['-A', 'INPUT', '-s', '203.0.113.9', '-j', 'ACCEPT']);
    const before = await snapshot(ns);
    const p = new IptablesPlugin(options(ns.runner()));
    await p.apply(fillers(3), CAP);
    await p.flush();
    expect(await snapshot(ns)).toEqual(before);
  });

  it('flush leaves rules it did not create, and says why the chain stays', async () => {
    const ns = await Netns.create();
    const p = new IptablesPlugin(options(ns.runner()));
    await p.apply(fillers(2), CAP);
    await ns.exec('iptables', ['-A', 'OUTPUT', '-d', '203.0.113.9', '-j', NAMES.chainName]);
    const err = await p.flush().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as Error).message).toMatch(/emptied but not deleted/);
    expect(await ns.exec('iptables', ['-S'])).toContain(`-A OUTPUT -d 203.0.113.9/32 -j ${NAMES.chainName}`);
    expect(await hookCount(ns, 'INPUT')).toBe(0);
    expect(await p.list()).toEqual([]);
  });

  it('hooks DOCKER-USER when that chain exists', async () => {
    const ns = await Netns.create();
    await ns.exec('iptables', ['-N', 'DOCKER-USER']);
    await ns.exec('iptables', ['-A', 'DOCKER-USER', '-j', 'RETURN']);
    const p = new IptablesPlugin(options(ns.runner()));
    await p.apply(fillers(3), CAP);
    expect((await ns.exec('iptables', ['-S', 'DOCKER-USER'])).split('\n')[1]).toBe(hookRule('DOCKER-USER'));
    await p.flush();
    expect(await ns.exec('iptables', ['-S', 'DOCKER-USER'])).toBe('-N DOCKER-USER\n-A DOCKER-USER -j RETURN');
  });
});
