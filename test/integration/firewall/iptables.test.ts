import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { IPTABLES_WARN_ENTRIES, IptablesPlugin } from '../../../src/firewall/xtables/plugin.js';
import type { FirewallEntry } from '../../../src/firewall/plugin.js';
import { ADDR, Netns, createLab, destroyAll, snapshot, wrapRunner, type Lab } from '../../netns/netns.js';
import { CAP, NAMES, fillers, net, options, sortedCidrs } from './common.js';

/** Source CIDRs of the agent chain's DROP rules, read with `iptables -S` independently of the plugin. */
async function kernelRules(ns: Netns): Promise<string[]> {
  return (await ns.exec('iptables', ['-S', NAMES.chainName]))
    .split('\n')
    .filter((l) => l.startsWith('-A'))
    .map((l) => /^-A \S+ -s (\S+) -j DROP$/.exec(l)?.[1]?.replace(/\/32$/, '') ?? `?? ${l}`);
}

async function hookCount(ns: Netns, chain: string): Promise<number> {
  return (await ns.exec('iptables', ['-S', chain])).split('\n').filter((l) => l === `-A ${chain} -j ${NAMES.chainName}`).length;
}

describe('iptables plugin on real netfilter', () => {
  let lab: Lab;
  let plugin: IptablesPlugin;
  let opts: ReturnType<typeof options>;
  const base: FirewallEntry[] = [...fillers(20), { cidr: net(ADDR.blocked), timeoutSeconds: 300 }, { cidr: net(ADDR.net24) }];

  beforeAll(async () => {
    lab = await createLab();
    opts = options(lab.host.runner());
    plugin = new IptablesPlugin(opts);
  });
  afterAll(async () => {
    await destroyAll();
  });

  it('puts exactly the given entries into the chain, a /24 staying a network', async () => {
    const r = await plugin.apply(base, CAP);
    expect(r).toMatchObject({ added: base.length, removed: 0, mode: 'full', repaired: [] });
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect((await kernelRules(lab.host)).sort()).toEqual(base.map((e) => e.cidr.text).sort());
    expect(await hookCount(lab.host, 'INPUT')).toBe(1);
    expect(await hookCount(lab.host, 'FORWARD')).toBe(1);
    expect(opts.lines.some((l) => String(l.msg).includes('no kernel timeouts'))).toBe(true);
  });

  it('drops real TCP from a blocked address and from inside a blocked /24, lets others through', async () => {
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
  });

  it('a second apply with an entry removed removes it (traffic passes again)', async () => {
    const next = base.filter((e) => e.cidr.text !== ADDR.blocked);
    expect(await plugin.apply(next, CAP)).toMatchObject({ removed: 1, added: 0, mode: 'full' });
    expect(await plugin.list()).toEqual(sortedCidrs(next));
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
    expect(await plugin.apply(base, CAP)).toMatchObject({ added: 1, mode: 'full' });
  });

  it('applying twice, or from a second instance, adds no duplicate hook or rule', async () => {
    expect(await plugin.apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
    expect(await new IptablesPlugin(options(lab.host.runner())).apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
    expect(await hookCount(lab.host, 'INPUT')).toBe(1);
    expect(await kernelRules(lab.host)).toHaveLength(base.length);
  });

  it('repairs hooks and rules removed by someone else, and reports them', async () => {
    await lab.host.exec('iptables', ['-F', 'INPUT']);
    expect((await plugin.apply(base, CAP)).repaired).toEqual([`hook INPUT -> ${NAMES.chainName}`]);
    expect(await hookCount(lab.host, 'INPUT')).toBe(1);
    await lab.host.exec('iptables', ['-D', NAMES.chainName, '-s', ADDR.blocked, '-j', 'DROP']);
    await lab.host.exec('iptables', ['-A', NAMES.chainName, '-j', 'ACCEPT']);
    const r = await plugin.apply(base, CAP);
    expect(r.repaired).toEqual([`rules of iptables chain ${NAMES.chainName} (differed from expected)`]);
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect(await kernelRules(lab.host)).toHaveLength(base.length);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
  });

  it('a failed apply leaves the previous rules in place and throws FirewallError with stderr', async () => {
    const before = await kernelRules(lab.host);
    // iptables-restore refuses the whole block (one commit) when one line is bad.
    const corrupt = wrapRunner(lab.host.runner(), ({ file, input }) =>
      file === 'iptables-restore' ? { input: (input ?? '').replace('COMMIT', `-A ${NAMES.chainName} -s 192.0.2.300 -j DROP\nCOMMIT`) } : undefined,
    );
    const err = await new IptablesPlugin(options(corrupt)).apply(fillers(30, undefined, 500), CAP).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as FirewallError).message).toMatch(/iptables-restore/);
    expect((err as FirewallError).stderr).toMatch(/192\.0\.2\.300/);
    expect(await kernelRules(lab.host)).toEqual(before);
  });

  it('logs with a rate limit before the action when configured', async () => {
    const p = new IptablesPlugin(options(lab.host.runner(), { logBlocked: true, action: 'REJECT' }));
    await p.apply(base, CAP);
    const rules = (await lab.host.exec('iptables', ['-S', NAMES.chainName])).split('\n').filter((l) => l.startsWith('-A'));
    expect(rules).toHaveLength(base.length * 2);
    expect(rules[0]).toMatch(/-m limit --limit 10\/min -j LOG --log-prefix "wcf-agent: "/);
    expect(rules[1]).toMatch(/-j REJECT/);
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

  it('flush restores the exact original ruleset', async () => {
    const ns = await Netns.create();
    await ns.exec('iptables', ['-N', 'USER-CHAIN']);
    await ns.exec('iptables', ['-A', 'USER-CHAIN', '-s', '203.0.113.50', '-j', 'ACCEPT']);
    await ns.exec('iptables', ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'ACCEPT']);
    await ns.exec('iptables', ['-A', 'FORWARD', '-j', 'USER-CHAIN']);
    await ns.exec('nft', ['add', 'table', 'inet', 'unrelated']);
    await ns.exec('ipset', ['create', 'unrelated', 'hash:net']);
    const before = await snapshot(ns);
    const p = new IptablesPlugin(options(ns.runner()));
    await p.apply([...fillers(20), { cidr: net('192.0.2.0/24') }], CAP);
    await p.apply(fillers(5), CAP);
    await p.flush();
    expect(await snapshot(ns)).toEqual(before);
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
    expect((await ns.exec('iptables', ['-S', 'DOCKER-USER'])).split('\n')[1]).toBe(`-A DOCKER-USER -j ${NAMES.chainName}`);
    await p.flush();
    expect(await ns.exec('iptables', ['-S', 'DOCKER-USER'])).toBe('-N DOCKER-USER\n-A DOCKER-USER -j RETURN');
  });
});
