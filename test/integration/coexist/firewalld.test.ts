import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { ADDR, createLab, isRoot, type Lab } from '../../netns/netns.js';
import { AgentUnderTest, CYCLES_WATCHED, REPAIR } from './agent.js';
import { Firewalld } from './managers.js';
import { NftObserver } from './observer.js';

/**
 * The agent beside Debian's firewalld (1.3, nftables backend, as RHEL 9 runs it), both in
 * the lab's host namespace: firewalld with a D-Bus daemon of its own and a private copy
 * of its configuration (see managers.ts), the agent as its daemon. A reload and a zone
 * change each leave the agent enforcing within 10 s, the agent never changes firewalld's
 * table, and the cycles after each change write nothing: no fight.
 */
describe.each(['nftables', 'ipset'] as const)('beside firewalld, the agent with the %s backend', (backend) => {
  let lab: Lab;
  let firewalld: Firewalld;
  let agent: AgentUnderTest;
  let observer: NftObserver;
  /** firewalld's table before the agent ever ran. */
  let tableBefore: string;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the coexistence tests need root (network and mount namespaces)');
    lab = await createLab();
    observer = await NftObserver.start(lab.host);
    firewalld = await Firewalld.start(lab.host);
    // The lab's server port in firewalld's default zone (public lets only ssh and dhcpv6-client in).
    await firewalld.cmd(['--permanent', '--zone=public', '--add-port=8080/tcp']);
    await firewalld.cmd(['--reload']);
    tableBefore = await firewalld.table();
    agent = await AgentUnderTest.start(lab, backend);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.remove();
    await firewalld?.stop();
    await observer?.stop();
    await lab?.destroy();
  }, 60_000);

  it('drops the listed address ahead of firewalld, which lets the port in, and leaves firewalld’s table as it was', async () => {
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    expect(await firewalld.table()).toBe(tableBefore);
    expect((await firewalld.cmd(['--state'])).trim()).toBe('running');
  });

  it('firewall-cmd --reload: enforcing again within 10 s, with only the repairs the reload made necessary, then no writes', async () => {
    const entries = await agent.entries();
    const r = await agent.around(() => firewalld.cmd(['--reload']));
    expect(r.cycles).toBeGreaterThanOrEqual(CYCLES_WATCHED);
    if (backend === 'nftables') {
      // firewalld rebuilds only its own table: the agent's is never touched, nothing to repair.
      expect(r.writes).toEqual([]);
    } else {
      // firewalld's reload flushes the iptables filter table (iptables-restore), the agent's
      // chain and hooks with it: put back by the watcher or by the next cycle. The reload runs
      // iptables-restore more than once; a cycle that lands between two of them puts back once
      // more (seen: a cycle's re-creation, then the watcher's after the second restore). Any
      // more, or a write in the cycles after, would be the agent fighting firewalld.
      const log = `${r.writes.join('\n')}\n${agent.daemon.raw.slice(-30).join('\n')}`;
      expect(r.writes.length, log).toBeGreaterThanOrEqual(1);
      expect(r.writes.length, log).toBeLessThanOrEqual(2);
      for (const w of r.writes) expect(w).toMatch(REPAIR);
    }
    expect(await agent.entries()).toEqual(entries);
    expect(await firewalld.table()).toBe(tableBefore);
  });

  it('a zone change to one that accepts everything: the listed address is still dropped, nothing repaired, nothing written', async () => {
    const r = await agent.around(() => firewalld.cmd(['--set-default-zone=trusted']));
    expect(r.writes).toEqual([]);
    expect(await firewalld.cmd(['--get-default-zone'])).toBe('trusted');
    // firewalld wrote the new default zone to its (private) permanent configuration.
    expect(firewalld.configFile('firewalld.conf')).toMatch(/^DefaultZone=trusted$/m);
    const trusted = await firewalld.table();
    expect(trusted).not.toBe(tableBefore);
    await agent.daemon.waitForLog(/^cycle done$/, agent.daemon.count(/^cycle done$/) + 2);
    expect(await firewalld.table()).toBe(trusted);
  });

  it('every change to firewalld’s table was made by firewalld itself, none by the agent', () => {
    const touching = observer.transactions.filter((t) => t.tables.has('inet firewalld'));
    // Its start, the reload before the agent, the test's reload and the zone change.
    expect(touching.length).toBeGreaterThanOrEqual(4);
    expect([...new Set(touching.map((t) => t.by))]).toEqual(['firewalld']);
  });

  it('flush removes the agent’s objects only: firewalld keeps its table and keeps running', async () => {
    const trusted = await firewalld.table();
    await agent.stop();
    const r = await runCli(['flush', '--config', agent.config]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await agent.entries()).toEqual([]);
    expect(await firewalld.table()).toBe(trusted);
    expect((await firewalld.cmd(['--state'])).trim()).toBe('running');
    expect(await lab.connect(ADDR.blocked)).toBe('connected');
  });
});
