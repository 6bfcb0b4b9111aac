import { describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import pino from 'pino';
import { createPlugin } from '../../../src/firewall/index.js';
import { parseNftCounters } from '../../../src/firewall/nft/json.js';
import type { PluginName } from '../../../src/firewall/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { parseIptablesCounters } from '../../../src/firewall/xtables/rules.js';

const NAMES = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' };

/** Each backend's own counter read, its commands answered by `runner`. */
function readDropCounters(name: PluginName, runner: CommandRunner) {
  return createPlugin(name, { names: NAMES, hookChains: ['INPUT'], action: 'DROP', logBlocked: false, logger: pino({ level: 'silent' }), runner }).readCounters();
}

const NFT_JSON = JSON.stringify({
  nftables: [
    { metainfo: { version: '1.0.6', json_schema_version: 1 } },
    { table: { family: 'inet', name: 'wcf_agent', handle: 1 } },
    { set: { family: 'inet', name: 'wcf-blocklist', table: 'wcf_agent', type: 'ipv4_addr', flags: ['interval', 'timeout'] } },
    { chain: { family: 'inet', table: 'wcf_agent', name: 'input', type: 'filter', hook: 'input', prio: -5, policy: 'accept' } },
    { rule: { family: 'inet', table: 'wcf_agent', chain: 'input', expr: [{ match: { op: '==', left: { payload: { protocol: 'ip', field: 'saddr' } }, right: '@wcf-blocklist' } }, { counter: { packets: 7, bytes: 420 } }, { drop: null }] } },
    { rule: { family: 'inet', table: 'wcf_agent', chain: 'forward', expr: [{ log: { prefix: 'wcf ' } }] } },
    { rule: { family: 'inet', table: 'wcf_agent', chain: 'forward', expr: [{ counter: { packets: 3, bytes: 180 } }, { drop: null }] } },
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
  it('sums the counter statements of the nft table', () => {
    expect(parseNftCounters(NFT_JSON)).toEqual({ packets: 10, bytes: 600 });
    expect(() => parseNftCounters('not json')).toThrow(FirewallError);
  });

  it('sums the DROP/REJECT rules of the iptables chain, not the LOG rules', () => {
    expect(parseIptablesCounters(IPT_L)).toEqual({ packets: 17, bytes: 1260 });
    expect(parseIptablesCounters('')).toEqual({ packets: 0, bytes: 0 });
  });

  it('reads with the owned names, read-only commands only', async () => {
    const nft = fakeRunner(() => NFT_JSON);
    expect(await readDropCounters('nftables', nft)).toEqual({ packets: 10, bytes: 600 });
    expect(nft.calls).toEqual([['nft', '-j', '-t', 'list', 'table', 'inet', 'wcf_agent']]);
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
