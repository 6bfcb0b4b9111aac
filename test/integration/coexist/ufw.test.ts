import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { DEFAULT_NAMES } from '../../helpers/kernel.js';
import { ADDR, createLab, isRoot, type Lab } from '../../netns/netns.js';
import { AgentUnderTest, CYCLES_WATCHED, REPAIR, type Backend } from './agent.js';
import { Ufw } from './managers.js';

/**
 * The agent beside Debian's ufw (0.36, on iptables-nft as on Ubuntu), both in the lab's
 * host namespace, ufw on a private copy of its configuration (see managers.ts). `ufw
 * reload`, `ufw disable` and `ufw enable` each leave the agent enforcing within 10 s,
 * ufw's rules are never changed by the agent, and the cycles after each command write
 * nothing beyond the one repair a command made necessary.
 *
 * With ufw as shipped (MANAGE_BUILTINS=no) ufw only adds and removes its own chains and
 * jumps, so nothing of the agent's is ever removed. With MANAGE_BUILTINS=yes ufw flushes
 * every chain of the filter table on each start and stop (`iptables -F`, `-X`), the agent's
 * chain and hooks with them: the ipset backend puts them back, once per flush.
 */
/** How many times the agent may write after each command: [at least, at most], repairs only. */
type Repairs = readonly [number, number];
const CASES: { backend: Backend; manageBuiltins: boolean; repairs: { reload: Repairs; disable: Repairs; enable: Repairs } }[] = [
  { backend: 'nftables', manageBuiltins: false, repairs: { reload: [0, 0], disable: [0, 0], enable: [0, 0] } },
  { backend: 'ipset', manageBuiltins: false, repairs: { reload: [0, 0], disable: [0, 0], enable: [0, 0] } },
  // `ufw reload` is a stop and a start, each flushing: one repair or two, as the agent put its
  // chain back between them or not. The repair is the watcher's or the next cycle's, whichever
  // comes first.
  { backend: 'ipset', manageBuiltins: true, repairs: { reload: [1, 2], disable: [1, 1], enable: [1, 1] } },
];

describe.each(CASES)('beside ufw (MANAGE_BUILTINS=$manageBuiltins), the agent with the $backend backend', ({ backend, manageBuiltins, repairs }) => {
  let lab: Lab;
  let ufw: Ufw;
  let agent: AgentUnderTest;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the coexistence tests need root (network and mount namespaces)');
    lab = await createLab();
    ufw = await Ufw.create(lab.host, { manageBuiltins });
    await ufw.run(['allow', '8080/tcp']);
    expect(await ufw.run(['--force', 'enable'])).toMatch(/Firewall is active/);
    agent = await AgentUnderTest.start(lab, backend);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.remove();
    ufw?.remove();
    await lab?.destroy();
  }, 60_000);

  /** ufw's command, then: enforcing within 10 s, only the repairs it made necessary over the next cycles, ufw's rules as ufw left them. */
  async function step(args: string[], [least, most]: Repairs): Promise<void> {
    let rulesAfterUfw = '';
    const r = await agent.around(async () => {
      await ufw.run(args);
      rulesAfterUfw = await ufw.rules(DEFAULT_NAMES.chain);
    });
    expect(r.cycles).toBeGreaterThanOrEqual(CYCLES_WATCHED);
    // Every write a repair (no refill of the set, nothing fighting ufw), as many as ufw's flushes.
    expect(r.writes.filter((w) => !REPAIR.test(w))).toEqual([]);
    expect(r.writes.length).toBeGreaterThanOrEqual(least);
    expect(r.writes.length).toBeLessThanOrEqual(most);
    expect(await ufw.rules(DEFAULT_NAMES.chain)).toBe(rulesAfterUfw);
  }

  it('drops the listed address ahead of ufw, which lets the port in', async () => {
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    expect(await ufw.run(['status'])).toMatch(/Status: active[\s\S]*8080\/tcp +ALLOW +Anywhere/);
  });

  it('ufw reload', async () => {
    await step(['reload'], repairs.reload);
  });

  it('ufw disable: ufw’s rules go, the agent’s stay (or come back)', async () => {
    await step(['disable'], repairs.disable);
    expect(await ufw.run(['status'])).toMatch(/Status: inactive/);
    expect(ufw.config()).toMatch(/^ENABLED=no$/m);
  });

  it('ufw enable', async () => {
    await step(['--force', 'enable'], repairs.enable);
    expect(await ufw.run(['status'])).toMatch(/Status: active/);
  });

  it('flush removes the agent’s objects only: ufw’s rules stay as they are and ufw stays active', async () => {
    const rules = await ufw.rules(DEFAULT_NAMES.chain);
    await agent.stop();
    const r = await runCli(['flush', '--config', agent.config]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await agent.entries()).toEqual([]);
    expect(await ufw.rules(DEFAULT_NAMES.chain)).toBe(rules);
    expect(await ufw.run(['status'])).toMatch(/Status: active/);
    // ufw's allowed port lets the formerly listed address in again.
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
  });
});
