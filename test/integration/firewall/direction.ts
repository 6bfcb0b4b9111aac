import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Direction } from '../../../src/firewall/direction.js';
import type { FirewallPlugin, HitCounter, PluginOptions } from '../../../src/firewall/plugin.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { ADDR, Netns, createLab, destroyAll, snapshot, type Lab } from '../../netns/netns.js';
import { CAP, fillers, net, options } from './common.js';
import { received, startTraffic, type Traffic } from './traffic.js';

/** A backend as the direction suite drives it. */
export interface DirectionBackend {
  readonly title: string;
  create(options: PluginOptions): FirewallPlugin;
  /** The address a hit is recorded under for a packet to or from `address` covered by `entry`. */
  hitAddress(address: string, entry: string): string;
}

const hitsOn = (hits: readonly HitCounter[], side: 'in' | 'out', ip: string) => hits.filter((h) => h.side === side && h.ip === ip);

/**
 * What `direction` changes, on real netfilter with a peer namespace over a
 * veth pair, for one backend and one direction. TCP needs packets both ways,
 * so a listed peer can neither connect in nor be reached out in every
 * direction (the replies are blocked); one-way UDP datagrams and the hit
 * counters show which side is matched.
 */
export function directionSuite(b: DirectionBackend, direction: Direction): void {
  const inbound = direction !== 'outbound';
  const outbound = direction !== 'inbound';
  describe(`${b.title}, direction ${direction}`, () => {
    let lab: Lab;
    let traffic: Traffic;
    let plugin: FirewallPlugin;
    // No timeouts: a refreshed timeout would count as a change in the idempotence checks below.
    const entries: FirewallEntry[] = [{ cidr: net(ADDR.blocked) }, { cidr: net(ADDR.net24) }, ...fillers(5)];
    const opts = (o: Partial<PluginOptions> = {}) => options(lab.host.runner(), { direction, hookChains: ['INPUT', 'FORWARD'], ...o });

    beforeAll(async () => {
      lab = await createLab();
      traffic = await startTraffic(lab);
      plugin = b.create(opts());
      await plugin.apply(entries, CAP);
    });
    afterAll(async () => {
      await destroyAll();
    });

    it('a listed peer can neither connect in nor be reached out over TCP; an allowed peer passes both ways', async () => {
      expect(await lab.connect(ADDR.allowed)).toBe('connected');
      expect(await traffic.connectOut(ADDR.allowed)).toBe('connected');
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
      expect(await traffic.connectOut(ADDR.blocked)).toBe('timeout');
      expect(await traffic.connectOut(ADDR.inNet)).toBe('timeout');
    });

    it(`UDP: datagrams from a listed peer ${inbound ? 'are dropped' : 'arrive'}, datagrams to it ${outbound ? 'are dropped' : 'leave'}; an allowed peer's pass both ways`, async () => {
      expect(await traffic.udpIn(ADDR.allowed, 'in-allowed')).toBe('sent');
      expect(await traffic.udpOut(ADDR.allowed, 'out-allowed')).toBe('sent');
      expect(await received(traffic.hostUdp, `udp ${ADDR.allowed} in-allowed`)).toBe(true);
      expect(await received(traffic.peerUdp, 'out-allowed')).toBe(true);
      await traffic.udpIn(ADDR.blocked, 'in-blocked');
      await traffic.udpOut(ADDR.blocked, 'out-blocked');
      // A later datagram from the same peer arriving proves the earlier one had its chance.
      await traffic.udpIn(ADDR.allowed, 'in-after');
      await traffic.udpOut(ADDR.allowed, 'out-after');
      expect(await received(traffic.hostUdp, 'in-after')).toBe(true);
      expect(await received(traffic.peerUdp, 'out-after')).toBe(true);
      expect(traffic.hostUdp.lines.some((l) => l.includes('in-blocked'))).toBe(!inbound);
      expect(traffic.peerUdp.lines.some((l) => l.includes('out-blocked'))).toBe(!outbound);
    });

    it(`hits are counted per address and side: ${direction === 'both' ? 'in and out' : direction === 'inbound' ? 'in only' : 'out only'}`, async () => {
      const hits = await plugin.readHits();
      const out = hitsOn(hits, 'out', b.hitAddress(ADDR.blocked, ADDR.blocked));
      const inn = hitsOn(hits, 'in', b.hitAddress(ADDR.blocked, ADDR.blocked));
      expect(out.length > 0).toBe(outbound);
      expect(inn.length > 0).toBe(inbound);
      for (const h of [...out, ...inn]) expect(h.bytes).toBeGreaterThanOrEqual(h.packets * 20);
      if (outbound) expect(hitsOn(hits, 'out', b.hitAddress(ADDR.inNet, ADDR.net24)).length).toBe(1);
      expect(hits.some((h) => h.ip === ADDR.allowed)).toBe(false);
      expect(hits.every((h) => h.side === 'in' ? inbound : outbound)).toBe(true);
    });

    it('an open TCP connection to a peer stops passing at the next packet once the peer is applied', async () => {
      const r = await traffic.openConnection(ADDR.other, async () => {
        await plugin.apply([...entries, { cidr: net(ADDR.other) }], CAP);
      });
      expect(r).toEqual({ first: true, after: 'lost' });
      await plugin.apply(entries, CAP);
      expect(await traffic.connectOut(ADDR.other)).toBe('connected');
    });

    if (outbound) {
      it('REJECT makes an outbound TCP connect fail with a reset and a UDP send with an ICMP error, not a timeout', async () => {
        const p = b.create(opts({ action: 'REJECT' }));
        await p.apply(entries, CAP);
        expect(await traffic.connectOut(ADDR.blocked, 10_000)).toBe('error:ECONNREFUSED');
        // A local send is refused (EPERM) by DROP and REJECT alike; only REJECT's
        // ICMP admin-prohibited reaches the socket (EHOSTUNREACH), so a client
        // waiting for an answer fails at once instead of at its own timeout.
        expect(await traffic.udpOutErrors(ADDR.blocked, 'rejected', 10_000)).toEqual(['icmp:EHOSTUNREACH', 'send:EPERM']);
        await plugin.apply(entries, CAP);
        expect(await traffic.connectOut(ADDR.blocked)).toBe('timeout');
        expect(await traffic.udpOutErrors(ADDR.blocked, 'dropped', 500)).toEqual(['send:EPERM']);
      });
    }

    const other: Direction = direction === 'both' ? 'inbound' : 'both';
    it(`changing direction to ${other} and back: the first apply after each change rebuilds the hooks, the next finds nothing to repair`, async () => {
      const p = b.create(opts({ direction: other }));
      const r = await p.apply(entries, CAP);
      // nftables lays its chains out again in place and says so (not damage); the others repair their hooks.
      if (b.title === 'nftables') expect(r).toMatchObject({ repaired: [], relaid: expect.stringContaining(`direction ${direction},`) });
      else expect(r.repaired.length).toBeGreaterThan(0);
      const again = await p.apply(entries, CAP);
      expect(again).toMatchObject({ mode: 'none', repaired: [] });
      await traffic.udpOut(ADDR.blocked, 'changed-out');
      await traffic.udpOut(ADDR.allowed, 'changed-after');
      expect(await received(traffic.peerUdp, 'changed-after')).toBe(true);
      expect(traffic.peerUdp.lines.some((l) => l.includes('changed-out'))).toBe(other === 'inbound');
      const back = await plugin.apply(entries, CAP);
      if (b.title === 'nftables') expect(back).toMatchObject({ repaired: [], relaid: expect.stringContaining(`direction ${other},`) });
      else expect(back.repaired.length).toBeGreaterThan(0);
      expect(await plugin.apply(entries, CAP)).toMatchObject({ mode: 'none', repaired: [] });
    });

    it('flush leaves iptables-save, ipset save and nft list ruleset exactly as before the agent', async () => {
      const ns = await Netns.create();
      await ns.exec('iptables', ['-A', 'OUTPUT', '-p', 'tcp', '--dport', '25', '-j', 'REJECT']);
      await ns.exec('iptables', ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'ACCEPT']);
      await ns.exec('ipset', ['create', 'unrelated', 'hash:ip']);
      await ns.exec('nft', ['add', 'table', 'inet', 'unrelated']);
      const before = await snapshot(ns);
      const p = b.create(options(ns.runner(), { direction }));
      await p.apply(entries, CAP);
      await b.create(options(ns.runner(), { direction: other })).apply(entries, CAP);
      await p.flush();
      expect(await snapshot(ns)).toEqual(before);
      expect(await p.readHits()).toEqual([]);
    });
  });
}
