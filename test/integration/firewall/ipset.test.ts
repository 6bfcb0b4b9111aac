import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { IpsetPlugin } from '../../../src/firewall/ipset/plugin.js';
import { tempSetName } from '../../../src/firewall/names.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { ADDR, Netns, createLab, destroyAll, snapshot, waitFor, wrapRunner, type Lab } from '../../netns/netns.js';
import { CAP, NAMES, fillers, net, options, sortedCidrs } from './common.js';
import { hookCount, ipsetEntries, hookRule } from './kernel.js';

async function setNames(ns: Netns): Promise<string[]> {
  return (await ns.exec('ipset', ['list', '-n'])).split('\n').filter(Boolean);
}

describe('ipset plugin on real netfilter', () => {
  let lab: Lab;
  let plugin: IpsetPlugin;
  let opts: ReturnType<typeof options>;
  const base: FirewallEntry[] = [
    ...fillers(40),
    { cidr: net(ADDR.blocked), timeoutSeconds: 300 },
    { cidr: net(ADDR.net24) },
    { cidr: net('192.0.2.0/24'), timeoutSeconds: 600 },
  ];

  beforeAll(async () => {
    lab = await createLab();
    opts = options(lab.host.runner());
    plugin = new IpsetPlugin(opts);
    // What the shared contract suite checks the first apply does (contract.test.ts).
    await plugin.apply(base, CAP);
  });
  afterAll(async () => {
    await destroyAll();
  });

  it('a small change takes the delta path: removes an entry (traffic passes again) and updates a changed timeout', async () => {
    const next = base
      .filter((e) => e.cidr.text !== ADDR.blocked)
      .map((e) => (e.cidr.text === '192.0.2.0/24' ? { cidr: e.cidr, timeoutSeconds: 5000 } : e));
    const r = await plugin.apply(next, CAP);
    expect(r).toMatchObject({ added: 0, removed: 1, updated: 1, mode: 'delta', repaired: [] });
    expect(await plugin.list()).toEqual(sortedCidrs(next));
    const kernel = await ipsetEntries(lab.host);
    expect(kernel.has(ADDR.blocked)).toBe(false);
    expect(kernel.get('192.0.2.0/24')).toBeGreaterThan(4990);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');

    // timeout -> permanent and back are updates too
    const perm = next.map((e) => (e.cidr.text === '192.0.2.0/24' ? { cidr: e.cidr } : e));
    expect(await plugin.apply(perm, CAP)).toMatchObject({ updated: 1, mode: 'delta' });
    expect((await ipsetEntries(lab.host)).get('192.0.2.0/24')).toBe(0);
    expect(await plugin.apply(next, CAP)).toMatchObject({ updated: 1, mode: 'delta' });
    expect((await ipsetEntries(lab.host)).get('192.0.2.0/24')).toBeGreaterThan(4990);
  });

  it('an entry with a short timeout leaves by itself', async () => {
    await plugin.apply([...base, { cidr: net('198.51.100.77'), timeoutSeconds: 2 }], CAP);
    expect(await plugin.list()).toContain('198.51.100.77');
    const gone = await waitFor(async () => !(await plugin.list()).includes('198.51.100.77'), 10_000);
    expect(gone).toBe(true);
    expect(await plugin.list()).toEqual(sortedCidrs(base));
  });

  it('large changes swap a rebuilt set in, small ones apply a delta; both give the right content', async () => {
    const big = [...base, ...fillers(3000, 3600, 1000)];
    expect(await plugin.apply(big, CAP)).toMatchObject({ mode: 'full', added: 3000 });
    expect(await plugin.list()).toEqual(sortedCidrs(big));

    const small = [...big.slice(0, -10), ...fillers(5, 60, 9000)];
    expect(await plugin.apply(small, CAP)).toMatchObject({ mode: 'delta', added: 5, removed: 10 });
    expect(await plugin.list()).toEqual(sortedCidrs(small));
    expect((await ipsetEntries(lab.host)).size).toBe(small.length);

    const shrink = base;
    expect(await plugin.apply(shrink, CAP)).toMatchObject({ mode: 'full', removed: 2995 });
    expect(await plugin.list()).toEqual(sortedCidrs(shrink));
    expect(await setNames(lab.host)).toEqual([NAMES.setName, `${NAMES.setName}-in`]); // no temp set left
  });

  it('a temp set left by a run killed mid-apply does not stop a full rebuild', async () => {
    await lab.host.exec('ipset', ['create', tempSetName(NAMES.setName), 'hash:net', 'timeout', '0']);
    await lab.host.exec('ipset', ['add', tempSetName(NAMES.setName), '198.51.100.200']);
    const wanted = [...fillers(300), { cidr: net(ADDR.blocked), timeoutSeconds: 300 }];
    const r = await plugin.apply(wanted, CAP);
    expect(r.mode).toBe('full');
    expect(await plugin.list()).toEqual(sortedCidrs(wanted));
    expect(await setNames(lab.host)).toEqual([NAMES.setName, `${NAMES.setName}-in`]); // no temp set left
    await plugin.apply(base, CAP);
  });

  it('grows the set beyond its maxelem by swapping in a larger one', async () => {
    const small = new IpsetPlugin(options(lab.host.runner()));
    const many = [...base, ...fillers(70_000, undefined, 20_000)];
    expect(await small.apply(many, { capacity: 10 })).toMatchObject({ mode: 'full' });
    expect((await plugin.list()).length).toBe(many.length);
    expect(await lab.host.exec('ipset', ['list', NAMES.setName, '-t'])).toMatch(/maxelem 7\d{4}/);
    expect(await plugin.apply(base, CAP)).toMatchObject({ mode: 'full' });
  });

  it('repairs hooks, rule and chain removed by someone else, and reports them', async () => {
    await lab.host.exec('iptables', ['-F', 'INPUT']);
    const r1 = await plugin.apply(base, CAP);
    expect(r1.repaired).toEqual([`hook INPUT -> ${NAMES.chainName}`]);
    expect(opts.lines.some((l) => l.level === 40 && JSON.stringify(l.repaired).includes('hook INPUT'))).toBe(true);
    expect(await hookCount(lab.host, 'INPUT')).toBe(1);
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');

    // duplicate hooks (someone re-ran an old script) are reduced to one
    await lab.host.exec('iptables', ['-A', 'FORWARD', '-j', NAMES.chainName]);
    expect((await plugin.apply(base, CAP)).repaired).toEqual([`duplicate hook FORWARD -> ${NAMES.chainName} removed`]);
    expect(await hookCount(lab.host, 'FORWARD')).toBe(1);

    await lab.host.exec('iptables', ['-F', NAMES.chainName]);
    expect((await plugin.apply(base, CAP)).repaired).toEqual([`rule in iptables chain ${NAMES.chainName}`]);

    // everything gone (iptables flushed, set destroyed): all re-created
    await lab.host.exec('iptables', ['-F']);
    await lab.host.exec('iptables', ['-X', NAMES.chainName]);
    await lab.host.exec('ipset', ['destroy', NAMES.setName]);
    const r2 = await plugin.apply(base, CAP);
    expect(r2.repaired).toEqual(
      expect.arrayContaining([`ipset set ${NAMES.setName}`, `iptables chain ${NAMES.chainName}`, `hook INPUT -> ${NAMES.chainName}`, `hook FORWARD -> ${NAMES.chainName}`]),
    );
    expect(r2.mode).toBe('full');
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
  });

  it('a prefetched read is used by the next apply, and one gone stale (objects wiped meanwhile) is read again', async () => {
    await plugin.apply(base, CAP);
    // Counts the kernel reads as they complete (the set's contents and the filter table).
    const reads: string[] = [];
    const inner = lab.host.runner();
    const counting = new IpsetPlugin({
      ...opts,
      runner: {
        async run(file, args, o) {
          const out = await inner.run(file, args, o);
          if (file === 'ipset' && args[0] === 'save') reads.push('set');
          if (file === 'iptables' && args.includes('-S')) reads.push('filter');
          return out;
        },
      },
    });
    await counting.apply(base, CAP);

    // Fresh prefetch, nothing changed in between: the apply reads nothing more.
    reads.length = 0;
    counting.prefetch();
    const next = base.filter((e) => e.cidr.text !== ADDR.blocked);
    expect(await counting.apply(next, CAP)).toMatchObject({ removed: 1, mode: 'delta', repaired: [] });
    expect(reads.sort()).toEqual(['filter', 'set']);
    expect(await plugin.list()).toEqual(sortedCidrs(next));

    // Prefetch, then someone wipes the rule, chain and set before the apply: the apply on the
    // stale read fails, is retried on a fresh read, and re-creates everything.
    reads.length = 0;
    counting.prefetch();
    expect(await waitFor(async () => reads.length === 2, 5000)).toBe(true);
    await lab.host.exec('iptables', ['-F']);
    await lab.host.exec('iptables', ['-X', NAMES.chainName]);
    await lab.host.exec('ipset', ['destroy', NAMES.setName]);
    const r = await counting.apply(base, CAP);
    expect(r.repaired).toEqual(expect.arrayContaining([`ipset set ${NAMES.setName}`, `iptables chain ${NAMES.chainName}`, `hook INPUT -> ${NAMES.chainName}`]));
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect(await hookCount(lab.host, 'INPUT')).toBe(1);
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(opts.lines.some((l) => l.level === 40 && String(l.msg).includes('retrying once'))).toBe(true);
  });

  it('a failed full apply leaves the previous set in place and throws FirewallError with stderr', async () => {
    const before = await plugin.list();
    // hash:net cannot hold /0: the kernel rejects the line, the swap never runs.
    const bad = [...fillers(2000, 60, 30_000), { cidr: net('0.0.0.0/0') }];
    const err = await plugin.apply(bad, CAP).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as FirewallError).message).toMatch(/ipset restore/);
    expect((err as FirewallError).message).toMatch(/CIDR/);
    expect((err as FirewallError).message).toContain(`(input line 2003: "add ${tempSetName(NAMES.setName)} 0.0.0.0/0")`);
    expect((err as FirewallError).stderr).toMatch(/Error in line/);
    expect(await plugin.list()).toEqual(before);
    expect(await setNames(lab.host)).toEqual([NAMES.setName, `${NAMES.setName}-in`]); // no temp set left
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
  });

  it('a delta that fails midway is rolled back to the previous set', async () => {
    const before = await ipsetEntries(lab.host);
    // One removal and one add the kernel rejects: the `del` line runs, then the `add` fails.
    const bad = [...base.filter((e) => e.cidr.text !== '192.0.2.0/24'), { cidr: net('0.0.0.0/0') }];
    const err = await plugin.apply(bad, CAP).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as FirewallError).stderr).toMatch(/CIDR/);
    const after = await ipsetEntries(lab.host);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    expect(after.get('192.0.2.0/24')).toBeGreaterThan(0);
    expect(opts.lines.some((l) => l.msg === 'ipset delta failed; previous set contents restored')).toBe(true);
    expect(await setNames(lab.host)).toEqual([NAMES.setName, `${NAMES.setName}-in`]); // no temp set left

    // A runner failing the second command (the restore) also leaves the set untouched.
    const failing = new IpsetPlugin(
      options(
        wrapRunner(lab.host.runner(), ({ file, args }) => {
          if (file === 'ipset' && args.includes('restore')) throw new FirewallError('injected failure', { command: 'ipset restore', stderr: 'injected' });
        }),
      ),
    );
    await expect(failing.apply(fillers(10), CAP)).rejects.toBeInstanceOf(FirewallError);
    expect([...(await ipsetEntries(lab.host)).keys()].sort()).toEqual([...before.keys()].sort());
  });

  it('REJECT and rate-limited LOG rules when configured', async () => {
    const p = new IpsetPlugin(options(lab.host.runner(), { action: 'REJECT', logBlocked: true }));
    const r = await p.apply(base, CAP);
    expect(r.repaired).toEqual([`rules of iptables chain ${NAMES.chainName} (differed from expected)`]);
    const rules = (await lab.host.exec('iptables', ['-S', NAMES.chainName])).split('\n').filter((l) => l.startsWith('-A'));
    expect(rules).toEqual([
      `-A ${NAMES.chainName} -m comment --comment wcf-agent`,
      `-A ${NAMES.chainName} ! -i lo ! -o lo -m set --match-set wcf-blocklist src -m limit --limit 10/min -j LOG --log-prefix "wcf-agent: "`,
      `-A ${NAMES.chainName} ! -i lo ! -o lo -m set --match-set wcf-blocklist src -j SET --add-set wcf-blocklist-in src --exist`,
      `-A ${NAMES.chainName} ! -i lo ! -o lo -p tcp -m set --match-set wcf-blocklist src -m set --match-set wcf-blocklist-in src -j REJECT --reject-with tcp-reset`,
      `-A ${NAMES.chainName} ! -i lo ! -o lo -m set --match-set wcf-blocklist src -m set --match-set wcf-blocklist-in src -j REJECT --reject-with icmp-admin-prohibited`,
      `-A ${NAMES.chainName} ! -i lo ! -o lo -p tcp -m set --match-set wcf-blocklist src -j REJECT --reject-with tcp-reset`,
      `-A ${NAMES.chainName} ! -i lo ! -o lo -m set --match-set wcf-blocklist src -j REJECT --reject-with icmp-admin-prohibited`,
    ]);
    expect(await lab.connect(ADDR.inNet)).toBe('error:ECONNREFUSED');
    expect(await p.apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
    await plugin.apply(base, CAP); // back to DROP for the next tests
  });

  it('flush removes the hooks, chain and sets, and tolerates their absence', async () => {
    await plugin.flush();
    expect(await setNames(lab.host)).toEqual([]);
    expect(await lab.host.exec('iptables', ['-S'])).not.toContain(NAMES.chainName);
    expect(await plugin.list()).toEqual([]);
    await plugin.flush();
    expect(await lab.connect(ADDR.inNet)).toBe('connected');
  });
});

describe('ipset plugin: the set is sized for the maximum_rules in force', () => {
  afterAll(async () => {
    await destroyAll();
  });

  /** maxelem and hashsize of the live set, as ipset reports them. */
  async function sizing(ns: Netns): Promise<{ maxelem: number; hashsize: number }> {
    const header = await ns.exec('ipset', ['list', NAMES.setName, '-t']);
    return { maxelem: Number(/maxelem (\d+)/.exec(header)![1]), hashsize: Number(/hashsize (\d+)/.exec(header)![1]) };
  }

  // The server's maximum_rules is 200,000 while config.json keeps the local default of 10,000: the
  // set must be sized from the server's value that comes with each apply, not from config.json.
  const SERVER = { capacity: 200_000 };

  it('grows 60k -> 70k -> 80k over three cycles: only the first apply rebuilds, the set is never resized', async () => {
    const ns = await Netns.create();
    const p = new IpsetPlugin(options(ns.runner()));
    const modes: string[] = [];
    const sizes: Array<{ maxelem: number; hashsize: number }> = [];
    // One fixed expiry, as a cycle's entries have: the timeouts the kernel counts down stay equal to the
    // wanted ones however long the applies take on a loaded machine, so only the new entries change.
    const expiresAt = Date.now() / 1000 + 3600;
    for (const n of [60_000, 70_000, 80_000]) {
      modes.push((await p.apply(fillers(n, Math.round(expiresAt - Date.now() / 1000)), SERVER)).mode);
      sizes.push(await sizing(ns));
      expect((await p.list()).length).toBe(n);
    }
    expect(sizes[0]!.maxelem).toBe(200_001);
    expect(sizes).toEqual([sizes[0], sizes[0], sizes[0]]);
    // The first fills an empty set; the next two add 10,000 each in place.
    expect(modes).toEqual(['full', 'delta', 'delta']);
    await p.flush();
  });

  it('growth past the local default within the delta limits stays a delta: only the first apply rebuilds', async () => {
    const ns = await Netns.create();
    const p = new IpsetPlugin(options(ns.runner()));
    // Sized from config.json's 10,000, the set had maxelem 65,536: the second and third applies
    // would not fit and each would rebuild it.
    const modes: string[] = [];
    for (const n of [65_000, 65_800, 66_600]) modes.push((await p.apply(fillers(n, 3600), SERVER)).mode);
    expect(modes).toEqual(['full', 'delta', 'delta']);
    expect((await p.list()).length).toBe(66_600);
    expect((await sizing(ns)).maxelem).toBe(200_001);
    // The cap really changes (the server lowers it back to the local value): one rebuild, to that size.
    expect((await p.apply(fillers(9_000, 3600), CAP)).mode).toBe('full');
    expect((await sizing(ns)).maxelem).toBe(65_536);
    expect((await p.apply(fillers(9_100, 3600), CAP)).mode).toBe('delta');
    await p.flush();
  });
});

describe('ipset plugin: ownership', () => {
  afterAll(async () => {
    await destroyAll();
  });

  it('flush also removes the empty iptables-nft base chains its hooks brought into being', async () => {
    // Only an INPUT rule before: hooking FORWARD makes iptables-nft create its FORWARD base chain.
    const ns = await Netns.create();
    await ns.exec('iptables', ['-A', 'INPUT', '-s', '203.0.113.9', '-j', 'ACCEPT']);
    const before = await snapshot(ns);
    const p = new IpsetPlugin(options(ns.runner()));
    await p.apply(fillers(3), CAP);
    expect(await ns.exec('nft', ['list', 'chain', 'ip', 'filter', 'FORWARD'])).toContain('jump WCF-AGENT');
    await p.flush();
    expect(await snapshot(ns)).toEqual(before);

    // Nothing at all before: nothing at all after.
    const empty = await Netns.create();
    const q = new IpsetPlugin(options(empty.runner()));
    await q.apply(fillers(3), CAP);
    await q.flush();
    expect(await snapshot(empty)).toEqual({ iptables: '', ipset: '', nft: '' });

    // A drop policy someone set is theirs: the chain stays.
    const policy = await Netns.create();
    const r = new IpsetPlugin(options(policy.runner()));
    await r.apply(fillers(3), CAP);
    await policy.exec('iptables', ['-P', 'FORWARD', 'DROP']);
    await r.flush();
    expect(await policy.exec('iptables', ['-S'])).toContain('-P FORWARD DROP');
    expect(await policy.exec('nft', ['list', 'chain', 'ip', 'filter', 'FORWARD'])).toContain('policy drop');
  });

  it('hooks DOCKER-USER when that chain exists', async () => {
    const ns = await Netns.create();
    await ns.exec('iptables', ['-N', 'DOCKER-USER']);
    await ns.exec('iptables', ['-A', 'DOCKER-USER', '-j', 'RETURN']);
    await ns.exec('iptables', ['-A', 'FORWARD', '-j', 'DOCKER-USER']);
    const p = new IpsetPlugin(options(ns.runner()));
    await p.apply(fillers(3), CAP);
    expect((await ns.exec('iptables', ['-S', 'DOCKER-USER'])).split('\n')[1]).toBe(hookRule('DOCKER-USER'));
    expect(await hookCount(ns, 'DOCKER-USER')).toBe(1);
    await p.apply(fillers(3), CAP);
    expect(await hookCount(ns, 'DOCKER-USER')).toBe(1);
    await p.flush();
    expect(await ns.exec('iptables', ['-S', 'DOCKER-USER'])).toBe('-N DOCKER-USER\n-A DOCKER-USER -j RETURN');
  });

  it('without DOCKER-USER, only the configured chains are hooked', async () => {
    const ns = await Netns.create();
    const p = new IpsetPlugin(options(ns.runner(), { hookChains: ['INPUT', 'DOCKER-USER'] }));
    await p.apply(fillers(3), CAP);
    expect(await hookCount(ns, 'INPUT')).toBe(1);
    expect(await hookCount(ns, 'FORWARD')).toBe(0);
    expect(await ns.exec('iptables', ['-S'])).not.toContain('DOCKER-USER');
  });
});
