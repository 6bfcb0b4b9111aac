import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirewallError, NotOwnedError, exitCodeOf } from '../../../src/errors.js';
import type { FirewallPlugin, PluginOptions } from '../../../src/firewall/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { ADDR, Netns, createLab, destroyAll, type Lab } from '../../netns/netns.js';
import { CAP, FOREIGN_NAMES, fillers, net, options, sortedCidrs } from './common.js';

/**
 * What every backend promises through the plugin interface, run over each
 * backend on real netfilter (same titles, same assertions). A backend's own
 * checks (hook counts, kernel timeouts) come through `checkApplied`.
 */
export interface ContractBackend {
  /** As the suite's title shows it. */
  readonly title: string;
  create(options: PluginOptions): FirewallPlugin;
  /** The runner the backend's commands go through inside `ns` (a legacy variant maps tool names). */
  runner(ns: Netns): CommandRunner;
  /** The CIDRs the kernel holds for the agent, read without the plugin. */
  kernel(ns: Netns): Promise<string[]>;
  /** The ruleset as text, to compare before and after (the same tools the backend uses). */
  snapshot(ns: Netns): Promise<unknown>;
  /** Put some objects that are not the agent's into `ns`, with the backend's tools. */
  foreignObjects(ns: Netns): Promise<void>;
  /** Remove the agent's objects as another tool would (a firewall reload). */
  wipe(ns: Netns): Promise<void>;
  /** A runner whose next writes the backend's tool rejects (one bad line inside each write). */
  corrupt(inner: CommandRunner): CommandRunner;
  /** The description `apply` reports for that wipe, first item. */
  readonly wipedRepair: string;
  /**
   * Make an administrator's own object under the names FOREIGN_NAMES (an nft
   * table with a drop policy and a set, a hash:net set, a chain with a jump to
   * it): what the agent must refuse to take over. Answers the object the
   * refusal names.
   */
  foreignUnderOurNames(ns: Netns): Promise<string>;
  /** Make exactly what the previous, unmarking version made under the default names, holding `legacyEntry`. */
  legacyObjects(ns: Netns): Promise<void>;
  /** The backend's ownership marker is in the kernel (read without the plugin). */
  marked(ns: Netns): Promise<boolean>;
  /** Backend-specific checks after the first apply of `base`. */
  checkApplied?(ns: Netns, logs: ReadonlyArray<Record<string, unknown>>): Promise<void>;
}

/** The distinct states of the plugin's owned objects. */
async function states(p: FirewallPlugin): Promise<string[]> {
  return [...new Set((await p.objects()).map((o) => o.state))];
}

export function contractSuite(b: ContractBackend): void {
  describe(`${b.title}: firewall plugin contract on real netfilter`, () => {
    let lab: Lab;
    let plugin: FirewallPlugin;
    let opts: ReturnType<typeof options>;
    const base: FirewallEntry[] = [...fillers(20), { cidr: net(ADDR.blocked), timeoutSeconds: 300 }, { cidr: net(ADDR.net24) }];

    beforeAll(async () => {
      lab = await createLab();
      opts = options(b.runner(lab.host));
      plugin = b.create(opts);
    });
    afterAll(async () => {
      await destroyAll();
    });

    it('puts exactly the given entries into the kernel, a /24 staying a network', async () => {
      expect(await states(plugin)).toEqual(['absent']);
      const r = await plugin.apply(base, CAP);
      expect(r).toMatchObject({ added: base.length, removed: 0, mode: 'full', repaired: [] });
      expect(await plugin.list()).toEqual(sortedCidrs(base));
      expect((await b.kernel(lab.host)).sort()).toEqual(base.map((e) => e.cidr.text).sort());
      expect(await states(plugin)).toEqual(['present']);
      await b.checkApplied?.(lab.host, opts.lines);
    });

    it('drops real TCP from a blocked address and from inside a blocked /24, lets others through', async () => {
      expect(await plugin.readCounters()).toEqual({ packets: 0, bytes: 0 });
      expect(await lab.connect(ADDR.allowed)).toBe('connected');
      expect(await lab.connect(ADDR.other)).toBe('connected');
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
      expect(await lab.connect(ADDR.inNet)).toBe('timeout');
      const c = await plugin.readCounters();
      expect(c.packets).toBeGreaterThanOrEqual(2); // a SYN from each blocked source, and retransmissions
      expect(c.bytes).toBeGreaterThanOrEqual(c.packets * 40);
    });

    it('a second apply with an entry removed removes it (traffic passes again)', async () => {
      const next = base.filter((e) => e.cidr.text !== ADDR.blocked);
      expect(await plugin.apply(next, CAP)).toMatchObject({ removed: 1, added: 0 });
      expect(await plugin.list()).toEqual(sortedCidrs(next));
      expect(await lab.connect(ADDR.blocked)).toBe('connected');
      expect(await plugin.apply(base, CAP)).toMatchObject({ added: 1 });
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    });

    it('applying twice, or from a second instance, adds nothing and repairs nothing', async () => {
      const before = await b.snapshot(lab.host);
      expect(await plugin.apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
      expect(await b.create(options(b.runner(lab.host))).apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
      expect(await b.snapshot(lab.host)).toEqual(before);
    });

    it('re-creates its objects after another tool removed them, and reports it', async () => {
      await b.wipe(lab.host);
      expect(await lab.connect(ADDR.blocked)).toBe('connected');
      const r = await plugin.apply(base, CAP);
      expect(r.repaired[0]).toBe(b.wipedRepair);
      expect(opts.lines.filter((l) => l.level === 40 && Array.isArray(l.repaired))).toHaveLength(1);
      expect(await plugin.list()).toEqual(sortedCidrs(base));
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    });

    it('a failed apply leaves the previous set in place and throws FirewallError with stderr', async () => {
      const before = await plugin.list();
      // A large change (a full rebuild or refill) with one line the tool rejects.
      const failing = b.corrupt(b.runner(lab.host));
      const err = await b.create(options(failing)).apply([...base.slice(1), ...fillers(2000, 60, 30_000)], CAP).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FirewallError);
      expect((err as FirewallError).stderr).toBeTruthy();
      expect(await plugin.list()).toEqual(before);
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    });

    it('refuses an object under its configured name that it did not create: exit 4, nothing changed, flush leaves it too', async () => {
      const ns = await Netns.create();
      const what = await b.foreignUnderOurNames(ns);
      const before = await b.snapshot(ns);
      const o = options(b.runner(ns), { names: FOREIGN_NAMES });
      const p = b.create(o);
      const err = await p.apply(base, CAP).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotOwnedError);
      expect((err as NotOwnedError).code).toBe('WCF_ERR_NOT_OWNED');
      expect(exitCodeOf(err)).toBe(4);
      expect((err as Error).message).toContain(`${what} exists and was not created by wcf-agent`);
      expect(await b.snapshot(ns)).toEqual(before);
      // Also when the agent's state says it applied before (an operator renamed table_name etc.).
      await expect(p.apply(base, { ...CAP, appliedBefore: true })).rejects.toBeInstanceOf(NotOwnedError);
      expect((await p.objects()).find((x) => x.what.endsWith(what.split(' ').pop()!))?.state).toBe('foreign');
      expect(await p.list()).toEqual([]);
      await p.flush();
      expect(await b.snapshot(ns)).toEqual(before);
      expect(o.lines.some((l) => l.level === 40 && String(l.msg).includes('left as it is'))).toBe(true);
    });

    it('adopts an earlier version’s unmarked objects of exactly its shape once, marks them, and flush removes them', async () => {
      const ns = await Netns.create();
      // A read first: legacy iptables brings its filter table into being on the first look, for good.
      expect(await b.create(options(b.runner(ns))).list()).toEqual([]);
      const empty = await b.snapshot(ns);
      await b.legacyObjects(ns);
      expect(await b.marked(ns)).toBe(false);
      const o = options(b.runner(ns));
      const p = b.create(o);
      await p.apply(base, { ...CAP, appliedBefore: true });
      expect(await p.list()).toEqual(sortedCidrs(base));
      expect(await b.marked(ns)).toBe(true);
      expect(o.lines.some((l) => String(l.msg).startsWith('adopting the unmarked'))).toBe(true);
      expect(await states(p)).toEqual(['present']);
      expect(await p.apply(base, CAP)).toMatchObject({ mode: 'none', repaired: [] });
      await p.flush();
      expect(await b.snapshot(ns)).toEqual(empty);
    });

    it('flush restores the exact original ruleset, and a second flush changes nothing', async () => {
      const ns = await Netns.create();
      await b.foreignObjects(ns);
      const before = await b.snapshot(ns);
      const p = b.create(options(b.runner(ns)));
      await p.apply([...fillers(20), { cidr: net('192.0.2.0/24'), timeoutSeconds: 100 }], CAP);
      await p.apply(fillers(5), CAP);
      await p.flush();
      expect(await b.snapshot(ns)).toEqual(before);
      expect(await p.list()).toEqual([]);
      expect(await p.readCounters()).toEqual({ packets: 0, bytes: 0 });
      await p.flush();
      expect(await b.snapshot(ns)).toEqual(before);
    });
  });
}
