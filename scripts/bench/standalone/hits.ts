/**
 * What a blocked address costs with the per-address hit counters on and off:
 * a peer namespace sends UDP from a listed address as fast as one sender can
 * for a few seconds over a veth pair; the host namespace drops it with the
 * agent's nft table (or ipset chain), with and without the hits set update.
 * Prints the drops per second each way (medians). Runs only inside the
 * namespaces it creates; needs root.
 *
 *   npx tsx scripts/bench/standalone/hits.ts [--seconds 3] [--runs 3]
 */
import { execa } from 'execa';
import { parseArgs } from 'node:util';
import { renderNftTable } from '../../../src/firewall/nft/table/build.js';
import { kernelColumns } from '../../../src/firewall/entries.js';
import { iptablesSetRules } from '../../../src/firewall/xtables/rules.js';
import { toCidr } from '../../../src/net/ipv4.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, runs: { type: 'string', default: '3' } } });
const SECONDS = Number(values.seconds);
const RUNS = Number(values.runs);
const HOST = `wcfhits-${process.pid}-h`;
const PEER = `wcfhits-${process.pid}-p`;
const BLOCKED = '198.18.1.10';

const inNs = (ns: string, file: string, args: string[], input?: string) => execa('ip', ['netns', 'exec', ns, file, ...args], { input: input ?? '' });

const SENDER = `
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 0))
end = time.time() + float(sys.argv[2]); n = 0; msg = b'x' * 32
while time.time() < end:
    for _ in range(1000):
        s.sendto(msg, ('198.18.0.1', 9))
    n += 1000
print(n)
`;

async function setup(): Promise<void> {
  for (const ns of [HOST, PEER]) await execa('ip', ['netns', 'add', ns]);
  await inNs(HOST, 'ip', ['link', 'add', 'h0', 'type', 'veth', 'peer', 'name', 'p0', 'netns', PEER]);
  await inNs(HOST, 'ip', ['addr', 'add', '198.18.0.1/16', 'dev', 'h0']);
  await inNs(HOST, 'ip', ['link', 'set', 'h0', 'up']);
  await inNs(PEER, 'ip', ['addr', 'add', `${BLOCKED}/16`, 'dev', 'p0', 'nodad']);
  await inNs(PEER, 'ip', ['link', 'set', 'p0', 'up']);
  await inNs(PEER, 'ip', ['neigh', 'replace', '198.18.0.1', 'lladdr', (await inNs(HOST, 'cat', ['/sys/class/net/h0/address'])).stdout.trim(), 'dev', 'p0']);
}

async function teardown(): Promise<void> {
  for (const ns of [HOST, PEER]) await execa('ip', ['netns', 'del', ns], { reject: false });
}

type Variant = { name: string; load(): Promise<void>; unload(): Promise<void>; dropped(): Promise<number> };

const entries = kernelColumns([{ cidr: toCidr(BLOCKED)!, timeout: undefined }]);
const layout = { table: 'wcf_agent', set: 'wcf-blocklist', nets: 'wcf-blocklist-nets', drops: 'wcf-blocklist-drops', hooks: ['input' as const], priority: -5, stage: 'filter' as const, inbound: 'all' as const, forwardedOut: true, action: 'DROP' as const, logBlocked: false, direction: 'inbound' as const };

function nftVariant(counting: boolean): Variant {
  const text = renderNftTable(layout, entries) + '\n';
  const script = counting ? text : text.replace(/ update @\S+ \{ ip saddr \}/g, '');
  return {
    name: `nftables, hit counters ${counting ? 'on' : 'off'}`,
    load: async () => void (await inNs(HOST, 'nft', ['-f', '-'], script)),
    unload: async () => void (await inNs(HOST, 'nft', ['delete', 'table', 'inet', 'wcf_agent'])),
    async dropped() {
      const out = (await inNs(HOST, 'nft', ['list', 'chain', 'inet', 'wcf_agent', 'input'])).stdout;
      return Number(/counter packets (\d+)/.exec(out)?.[1] ?? 0);
    },
  };
}

function ipsetVariant(counting: boolean): Variant {
  const rules = counting
    ? iptablesSetRules('WCF-AGENT', 'wcf-blocklist', 'DROP', false, 'inbound')
    : ['-A WCF-AGENT ! -i lo ! -o lo -m set --match-set wcf-blocklist src -j DROP'];
  return {
    name: `ipset, hit counters ${counting ? 'on' : 'off'}`,
    async load() {
      await inNs(HOST, 'ipset', ['create', 'wcf-blocklist', 'hash:net', 'timeout', '0']);
      await inNs(HOST, 'ipset', ['add', 'wcf-blocklist', BLOCKED]);
      await inNs(HOST, 'ipset', ['create', 'wcf-blocklist-in', 'hash:ip', 'timeout', '604800', 'counters']);
      await inNs(HOST, 'iptables-restore', ['--noflush'], `*filter\n:WCF-AGENT - [0:0]\n${rules.join('\n')}\n-I INPUT 1 -j WCF-AGENT\nCOMMIT\n`);
    },
    async unload() {
      await inNs(HOST, 'iptables', ['-D', 'INPUT', '-j', 'WCF-AGENT']);
      await inNs(HOST, 'iptables', ['-F', 'WCF-AGENT']);
      await inNs(HOST, 'iptables', ['-X', 'WCF-AGENT']);
      await inNs(HOST, 'ipset', ['destroy', 'wcf-blocklist-in']);
      await inNs(HOST, 'ipset', ['destroy', 'wcf-blocklist']);
    },
    async dropped() {
      const out = (await inNs(HOST, 'iptables', ['-L', 'WCF-AGENT', '-v', '-x', '-n'])).stdout;
      return out.split('\n').filter((l) => / DROP /.test(l)).reduce((n, l) => n + Number(l.trim().split(/\s+/)[0]), 0);
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  await setup();
  try {
    const variants = [nftVariant(false), nftVariant(true), ipsetVariant(false), ipsetVariant(true)];
    const rates = new Map<string, number[]>(variants.map((v) => [v.name, []]));
    for (let run = 0; run < RUNS; run++) {
      for (const v of variants) {
        await v.load();
        const sent = Number((await inNs(PEER, 'python3', ['-c', SENDER, BLOCKED, String(SECONDS)])).stdout.trim());
        const dropped = await v.dropped();
        await v.unload();
        if (dropped < sent * 0.9) throw new Error(`${v.name}: only ${dropped} of ${sent} packets were dropped by the rule`);
        rates.get(v.name)!.push(dropped / SECONDS);
      }
    }
    for (const [name, r] of rates) console.log(`${name}: ${Math.round(median(r)).toLocaleString('en')} dropped packets/s (runs: ${r.map((x) => Math.round(x)).join(', ')})`);
  } finally {
    await teardown();
  }
}

await main();
