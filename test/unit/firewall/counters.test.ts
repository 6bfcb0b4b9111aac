import { describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import pino from 'pino';
import { createPlugin } from '../../../src/firewall/index.js';
import { parseNftDrops } from '../../../src/firewall/nft/json.js';
import type { PluginName } from '../../../src/firewall/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { parseIptablesCounters } from '../../../src/firewall/xtables/rules.js';

const NAMES = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' };

/** Each backend's own counter read, its commands answered by `runner`. */
function readDropCounters(name: PluginName, runner: CommandRunner) {
  return createPlugin(name, { names: NAMES, hookChains: ['INPUT'], action: 'DROP', logBlocked: false, logger: pino({ level: 'silent' }), runner }).readCounters();
}

/** `nft -j list set inet wcf_agent wcf-blocklist-drops`: the drops set, its one element counting every blocked packet. */
const NFT_JSON = JSON.stringify({
  nftables: [
    { metainfo: { version: '1.0.6', json_schema_version: 1 } },
    { set: { family: 'inet', name: 'wcf-blocklist-drops', table: 'wcf_agent', type: 'nf_proto', size: 4, elem: [{ elem: { val: 'ipv4', counter: { packets: 10, bytes: 600 } } }], stmt: [{ counter: null }] } },
  ],
});

const IPT_L = `Chain WCF-AGENT (2 references)
    pkts      bytes target     prot opt in     out     source               destination
      12      960 LOG        all  --  *      *       0.0.0.0/0            0.0.0.0/0            match-set wcf-blocklist src limit: avg 10/min burst 5 LOG flags 0 level 4 prefix "wcf "
      12      960 DROP       all  --  *      *       0.0.0.0/0            0.0.0.0/0            match-set wcf-blocklist src
       5      300 REJECT     all  --  *      *       192.0.2.7            0.0.0.0/0            reject-with icmp-port-unreachable
`;

function fakeRunner(answer: (file: string, args: readonly string[]) => string | Error): CommandRunner & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    async run(file, args) {
      calls.push([file, ...args]);
      const a = answer(file, args);
      if (a instanceof Error) throw a;
      return { stdout: a, stderr: '' };
    },
  };
}

describe('drop counters', () => {
  it('sums the counters of the drops set (nothing blocked yet: no element, zero)', () => {
    expect(parseNftDrops(NFT_JSON)).toEqual({ packets: 10, bytes: 600 });
    expect(parseNftDrops(JSON.stringify({ nftables: [{ set: { name: 'wcf-blocklist-drops', type: 'nf_proto' } }] }))).toEqual({ packets: 0, bytes: 0 });
    expect(() => parseNftDrops('not json')).toThrow(FirewallError);
  });

  it('sums the DROP/REJECT rules of the iptables chain, not the LOG rules', () => {
    expect(parseIptablesCounters(IPT_L)).toEqual({ packets: 17, bytes: 1260 });
    expect(parseIptablesCounters('')).toEqual({ packets: 0, bytes: 0 });
  });

  it('reads with the owned names, read-only commands only', async () => {
    const nft = fakeRunner(() => NFT_JSON);
    expect(await readDropCounters('nftables', nft)).toEqual({ packets: 10, bytes: 600 });
    // The drops set alone: never a listing of the table or its rules (nft fetches every element for those).
    expect(nft.calls).toEqual([['nft', '-j', 'list', 'set', 'inet', 'wcf_agent', 'wcf-blocklist-drops']]);
    const ipt = fakeRunner(() => IPT_L);
    expect(await readDropCounters('ipset', ipt)).toEqual({ packets: 17, bytes: 1260 });
    expect(ipt.calls[0]).toEqual(['iptables', '-w', '10', '-t', 'filter', '-L', 'WCF-AGENT', '-v', '-x', '-n']);
    const none = fakeRunner(() => new Error('never called'));
    expect(await readDropCounters('dry-run', none)).toEqual({ packets: 0, bytes: 0 });
    expect(none.calls).toEqual([]);
  });

  it('absent objects count as zero; other failures throw', async () => {
    const absentNft = fakeRunner(() => new FirewallError('command failed', { stderr: 'Error: No such file or directory\nlist table inet wcf_agent' }));
    expect(await readDropCounters('nftables', absentNft)).toEqual({ packets: 0, bytes: 0 });
    const absentIpt = fakeRunner(() => new FirewallError('command failed', { stderr: 'iptables: No chain/target/match by that name.' }));
    expect(await readDropCounters('iptables', absentIpt)).toEqual({ packets: 0, bytes: 0 });
    // iptables-nft 1.8.9 calls a chain missing from a missing table "incompatible": absent if `-S` lacks it.
    const incompatible = new FirewallError('command failed', { stderr: "iptables v1.8.9 (nf_tables): chain `WCF-AGENT' in table `filter' is incompatible, use 'nft' tool." });
    const nftOnly = fakeRunner((_f, args) => (args.includes('-L') ? incompatible : '-P INPUT ACCEPT\n'));
    expect(await readDropCounters('ipset', nftOnly)).toEqual({ packets: 0, bytes: 0 });
    const reallyIncompatible = fakeRunner((_f, args) => (args.includes('-L') ? incompatible : '-P INPUT ACCEPT\n-N WCF-AGENT\n'));
    await expect(readDropCounters('ipset', reallyIncompatible)).rejects.toMatchObject({ stderr: expect.stringMatching(/incompatible/) });
    const denied = fakeRunner(() => new FirewallError('command failed', { stderr: 'Operation not permitted' }));
    await expect(readDropCounters('nftables', denied)).rejects.toThrow(FirewallError);
  });
});
