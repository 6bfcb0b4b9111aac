import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { ADDR, Netns, createLab, destroyAll, waitFor, wrapRunner, type Lab } from '../../netns/netns.js';
import { CAP, NAMES, fillers, net, options, sortedCidrs } from './common.js';
import { nftElements } from './kernel.js';

async function chains(ns: Netns): Promise<string> {
  return ns.exec('nft', ['-t', 'list', 'table', 'inet', NAMES.tableName]);
}

describe('nftables plugin on real netfilter', () => {
  let lab: Lab;
  let plugin: NftablesPlugin;
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
    plugin = new NftablesPlugin(opts);
    // What the shared contract suite checks the first apply does (contract.test.ts).
    await plugin.apply(base, CAP);
  });
  afterAll(async () => {
    await destroyAll();
  });

  it('a small change is one delta transaction: removes an entry (traffic passes again), updates a changed timeout', async () => {
    const next = base
      .filter((e) => e.cidr.text !== ADDR.blocked)
      .map((e) => (e.cidr.text === '192.0.2.0/24' ? { cidr: e.cidr, timeoutSeconds: 5000 } : e));
    const r = await plugin.apply(next, CAP);
    expect(r).toMatchObject({ added: 0, removed: 1, updated: 1, mode: 'delta', repaired: [] });
    expect(await plugin.list()).toEqual(sortedCidrs(next));
    const kernel = await nftElements(lab.host);
    expect(kernel.has(ADDR.blocked)).toBe(false);
    expect(kernel.get('192.0.2.0/24')?.timeout).toBe(5000);
    expect(await lab.connect(ADDR.blocked)).toBe('connected');

    const perm = next.map((e) => (e.cidr.text === '192.0.2.0/24' ? { cidr: e.cidr } : e));
    expect(await plugin.apply(perm, CAP)).toMatchObject({ updated: 1, mode: 'delta' });
    expect((await nftElements(lab.host)).get('192.0.2.0/24')).toEqual({});
    expect(await plugin.apply(next, CAP)).toMatchObject({ updated: 1, mode: 'delta' });
    expect((await nftElements(lab.host)).get('192.0.2.0/24')?.timeout).toBe(5000);
  });

  it('reads its sets back from nft’s text form as nft’s JSON gives them; an element carrying a comment is read through JSON', async () => {
    await plugin.apply([...base, { cidr: net('198.51.100.0/25'), timeoutSeconds: 900 }], CAP);
    const json = await nftElements(lab.host);
    const remaining = (v: { timeout?: number; expires?: number }) => (v.expires ?? v.timeout) === undefined ? undefined : Math.max(v.expires ?? v.timeout!, 1);
    const read = await plugin.listTimeouts();
    expect([...read.keys()].sort()).toEqual([...json.keys()].sort());
    for (const [cidr, v] of json) {
      const want = remaining(v);
      // Read a moment apart: the text form's remaining time is at most a second or two behind JSON's.
      if (want === undefined) expect(read.get(cidr), cidr).toBeUndefined();
      else expect(Math.abs(read.get(cidr)! - want), cidr).toBeLessThanOrEqual(2);
    }
    // Someone else's element with a comment (a comma inside): not delimited safely in text, so read as JSON.
    await lab.host.exec('nft', ['add', 'element', 'inet', NAMES.tableName, NAMES.setName, '{ 203.0.113.250 comment "a, 198.51.100.250" }']);
    const withComment = await plugin.listTimeouts();
    expect(withComment.has('203.0.113.250')).toBe(true);
    expect(withComment.has('198.51.100.250')).toBe(false);
    expect(withComment.size).toBe(read.size + 1);
    await lab.host.exec('nft', ['delete', 'element', 'inet', NAMES.tableName, NAMES.setName, '{ 203.0.113.250 }']);
    await plugin.apply(base, CAP);
  });

  it('an entry with a short timeout leaves by itself', async () => {
    await plugin.apply([...base, { cidr: net('198.51.100.77'), timeoutSeconds: 2 }], CAP);
    expect(await plugin.list()).toContain('198.51.100.77');
    expect(await waitFor(async () => !(await plugin.list()).includes('198.51.100.77'), 10_000)).toBe(true);
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    // the expired element is gone from the kernel: a later delta does not trip over it
    expect(await plugin.apply(base, CAP)).toMatchObject({ mode: 'none' });
  });

  it('removing an element that expires between the read and the transaction does not fail the transaction', async () => {
    await plugin.apply([...base, { cidr: net('198.51.100.78'), timeoutSeconds: 3 }], CAP);
    expect(await plugin.list()).toContain('198.51.100.78');
    const inner = lab.host.runner();
    const delayed: typeof inner = {
      async run(file, args, o) {
        // Hold the transaction until the element it deletes has expired in the kernel.
        if (file === 'nft' && args[0] === '-f') {
          expect(await waitFor(async () => !(await plugin.list()).includes('198.51.100.78'), 10_000, 100)).toBe(true);
        }
        return inner.run(file, args, o);
      },
    };
    const p = new NftablesPlugin(options(delayed));
    expect(await p.apply(base, CAP)).toMatchObject({ mode: 'delta', removed: 1 });
    expect(await plugin.list()).toEqual(sortedCidrs(base));
  });

  it('large changes refill the set in one transaction, small ones apply a delta; both give the right content', async () => {
    const big = [...base, ...fillers(3000, 3600, 1000)];
    expect(await plugin.apply(big, CAP)).toMatchObject({ mode: 'full', added: 3000, repaired: [] });
    expect(await plugin.list()).toEqual(sortedCidrs(big));
    const small = [...big.slice(0, -10), ...fillers(5, 60, 9000)];
    expect(await plugin.apply(small, CAP)).toMatchObject({ mode: 'delta', added: 5, removed: 10 });
    expect(await plugin.list()).toEqual(sortedCidrs(small));
    expect(await plugin.apply(base, CAP)).toMatchObject({ mode: 'full', removed: 2995 });
    expect(await plugin.list()).toEqual(sortedCidrs(base));
  });

  it('overlapping entries: an address inside a network sits in the set of addresses; a network inside a network that outlives it splits the wider one', async () => {
    // Two sets (addresses, networks): an address inside a listed network is kept with its own timeout.
    const covered = [...base, { cidr: net('198.18.2.77'), timeoutSeconds: 60 }]; // inside the permanent /24
    expect(await plugin.apply(covered, CAP)).toMatchObject({ mode: 'delta', added: 1 });
    expect(await plugin.list()).toEqual(sortedCidrs(covered));
    expect(await plugin.apply(base, CAP)).toMatchObject({ mode: 'delta', removed: 1 });

    // A permanent /32 inside a timed /24: each in its own set, each with its own timeout.
    await plugin.apply([...base, { cidr: net('192.0.2.7') }], CAP);
    let kernel = await nftElements(lab.host);
    expect(kernel.get('192.0.2.7')).toEqual({});
    expect(kernel.get('192.0.2.0/24')?.timeout).toBe(600);
    // A permanent /26 inside the timed /24: the /24 is split around it, nothing overlaps, all of it blocked.
    await plugin.apply([...base, { cidr: net('192.0.2.0/26') }], CAP);
    kernel = await nftElements(lab.host);
    expect(kernel.get('192.0.2.0/26')).toEqual({});
    expect(kernel.has('192.0.2.0/24')).toBe(false);
    expect(kernel.get('192.0.2.128/25')?.timeout).toBe(600);
    expect([...kernel.keys()].filter((k) => k.startsWith('192.0.2.')).sort()).toEqual(['192.0.2.0/26', '192.0.2.128/25', '192.0.2.64/26']);
    await plugin.apply(base, CAP);
    expect(await plugin.list()).toEqual(sortedCidrs(base));
  });

  it('repairs a deleted table or an emptied chain, and reports it', async () => {
    await lab.host.exec('nft', ['delete', 'table', 'inet', NAMES.tableName]);
    expect(await lab.connect(ADDR.inNet)).toBe('connected');
    const r = await plugin.apply(base, CAP);
    expect(r).toMatchObject({ mode: 'full', repaired: [`nft table inet ${NAMES.tableName}`] });
    expect(opts.lines.some((l) => l.level === 40 && JSON.stringify(l.repaired).includes('nft table'))).toBe(true);
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');

    await lab.host.exec('nft', ['flush', 'chain', 'inet', NAMES.tableName, 'prerouting']);
    expect((await plugin.apply(base, CAP)).repaired).toEqual(['rule in nft chain prerouting']);
    // A rule another process put in the agent's table (an accept in front of its drop lets a listed
    // address through) takes the next handle, which the quick check asks for: the table is re-created.
    await lab.host.exec('nft', ['insert', 'rule', 'inet', NAMES.tableName, 'prerouting', 'accept']);
    expect(await lab.connect(ADDR.inNet)).toBe('connected');
    expect((await plugin.apply(base, CAP)).repaired).toEqual([`objects another process added to nft table inet ${NAMES.tableName}`]);
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
    await lab.host.exec('nft', ['add', 'set', 'inet', NAMES.tableName, 'extra', '{ type ipv4_addr; }']);
    expect((await plugin.apply(base, CAP)).repaired).toEqual([`objects another process added to nft table inet ${NAMES.tableName}`]);
    // Nothing left to repair. (The repairs above kept the sets: on a slow run the 5-minute entry's
    // timeout has run down past the tolerance by now, and is refreshed.)
    expect(await plugin.apply(base, CAP)).toMatchObject({ added: 0, removed: 0, repaired: [] });
    expect(await plugin.list()).toEqual(sortedCidrs(base));
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
  });

  it('after `nft flush ruleset`, a new process that knows of an earlier apply warns of a repair once, not of a first install', async () => {
    const ns = await Netns.create();
    const first = options(ns.runner());
    await new NftablesPlugin(first).apply(base, CAP);
    expect(first.lines.some((l) => l.level === 30 && l.msg === 'created nft table')).toBe(true);
    await ns.exec('nft', ['flush', 'ruleset']);
    const o = options(ns.runner());
    const r = await new NftablesPlugin(o).apply(base, { ...CAP, appliedBefore: true });
    expect(r.repaired).toEqual([`nft table inet ${NAMES.tableName}`]);
    expect(o.lines.filter((l) => l.level === 40)).toHaveLength(1);
    expect(o.lines.some((l) => String(l.msg).startsWith('created'))).toBe(false);
    await ns.destroy();
  });

  it('a failed transaction leaves the previous set in place and throws FirewallError with stderr', async () => {
    const before = await plugin.list();
    // The transaction gets one line nft rejects at its end: the whole transaction is refused.
    const corrupt = wrapRunner(lab.host.runner(), ({ file, args, input }) =>
      file === 'nft' && args[0] === '-f' ? { input: `${input ?? ''}add element inet ${NAMES.tableName} ${NAMES.setName} { 192.0.2.300 }\n` } : undefined,
    );
    const failing = new NftablesPlugin(options(corrupt));
    for (const entries of [fillers(2000, 60, 30_000), [...base.slice(1), { cidr: net('198.51.100.9') }]]) {
      const err = await failing.apply(entries, CAP).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FirewallError);
      expect((err as FirewallError).message).toMatch(/nft -f -/);
      expect((err as FirewallError).stderr).toMatch(/Error/);
      expect(await plugin.list()).toEqual(before);
    }
    expect(await lab.connect(ADDR.inNet)).toBe('timeout');
  });

  it('REJECT and rate-limited log rules when configured', async () => {
    const p = new NftablesPlugin(options(lab.host.runner(), { action: 'REJECT', logBlocked: true }));
    const r = await p.apply(base, CAP);
    // The DROP table's chains, laid out again for REJECT and logging in place: a new layout, not a repair.
    expect(r).toMatchObject({ repaired: [], relaid: expect.stringMatching(/action DROP, log_blocked off/) });
    const text = await chains(lab.host);
    expect(text).toMatch(/ip saddr @wcf-blocklist iif != "lo" limit rate 10\/minute (?:burst 5 packets )?log prefix "wcf-agent: "/);
    expect(text).toMatch(/ip saddr @wcf-blocklist iif != "lo" update @wcf-blocklist-in \{ ip saddr \} update @wcf-blocklist-drops \{ meta nfproto \} counter packets \d+ bytes \d+ jump refuse/);
    expect(text).toMatch(/chain refuse \{\n\s+meta l4proto tcp reject with tcp reset\n\s+reject with icmpx admin-prohibited/);
    expect(await lab.connect(ADDR.inNet)).toBe('error:ECONNREFUSED');
    expect(await p.apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
    expect(await p.list()).toEqual(sortedCidrs(base));
    // doctor and status list the refuse chain with the rest; deleting it shows as absent.
    const refuse = 'nft chain inet wcf_agent refuse';
    expect((await p.objects()).find((o) => o.what === refuse)?.state).toBe('present');
    await lab.host.exec('nft', ['flush', 'chain', 'inet', NAMES.tableName, 'input']);
    await lab.host.exec('nft', ['flush', 'chain', 'inet', NAMES.tableName, 'forward']);
    await lab.host.exec('nft', ['delete', 'chain', 'inet', NAMES.tableName, 'refuse']);
    expect(await p.objects()).toEqual(expect.arrayContaining([{ what: refuse, state: 'absent' }, { what: 'rule in nft chain input', state: 'absent' }]));
  });

  it('flush deletes the table and tolerates its absence', async () => {
    await plugin.flush();
    expect(await lab.host.exec('nft', ['list', 'tables'])).not.toContain(NAMES.tableName);
    expect(await plugin.list()).toEqual([]);
    await plugin.flush();
    expect(await lab.connect(ADDR.inNet)).toBe('connected');
  });
});

