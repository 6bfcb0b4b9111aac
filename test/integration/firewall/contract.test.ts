import { existsSync } from 'node:fs';
import { IpsetPlugin } from '../../../src/firewall/ipset/plugin.js';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { IptablesPlugin } from '../../../src/firewall/xtables/plugin.js';
import { ADDR, Netns, snapshot, wrapRunner } from '../../netns/netns.js';
import { describe, expect, it } from 'vitest';
import { FOREIGN_NAMES, NAMES } from './common.js';
import { contractSuite, type ContractBackend } from './contract.js';
import { chainSources, hookCount, ipsetEntries, nftElements, hookRule } from './kernel.js';

/** One line no tool accepts: 192.0.2.300 is not an address. */
const BAD = '192.0.2.300';

const nftables: ContractBackend = {
  title: 'nftables',
  create: (o) => new NftablesPlugin(o),
  runner: (ns) => ns.runner(),
  kernel: async (ns) => [...(await nftElements(ns)).keys()],
  // Terse: the elements' remaining times change from one listing to the next.
  snapshot: async (ns) => ({ ...(await snapshot(ns)), nft: await ns.exec('nft', ['-t', 'list', 'ruleset']) }),
  async foreignObjects(ns) {
    await ns.exec('nft', ['add', 'table', 'inet', 'unrelated']);
    await ns.exec('nft', ['add', 'set', 'inet', 'unrelated', 's', '{ type ipv4_addr; }']);
    await ns.exec('nft', ['add', 'chain', 'inet', 'unrelated', 'c', '{ type filter hook input priority -5; policy accept; }']);
    await ns.exec('nft', ['add', 'rule', 'inet', 'unrelated', 'c', 'ip', 'saddr', '@s', 'drop']);
    await ns.exec('iptables', ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'ACCEPT']);
    await ns.exec('ipset', ['create', 'unrelated', 'hash:ip']);
  },
  async foreignUnderOurNames(ns) {
    // An admin's table: drop policy on input (ssh allowed), and an allow-set of their own.
    await ns.exec('nft', ['-f', '-'], `table inet ${FOREIGN_NAMES.tableName} {\n\tset ${FOREIGN_NAMES.setName} { type ipv4_addr; flags interval; elements = { 192.0.2.0/24 } }\n\tchain input { type filter hook input priority 0; policy drop; ip saddr @${FOREIGN_NAMES.setName} accept; tcp dport 22 accept; }\n}\n`);
    return `nft table inet ${FOREIGN_NAMES.tableName}`;
  },
  async legacyObjects(ns) {
    // The table as the previous version wrote it: no comments.
    await ns.exec('nft', ['-f', '-'], `table inet ${NAMES.tableName} {\n\tset ${NAMES.setName} { type ipv4_addr; flags interval,timeout; elements = { 198.51.100.77 } }\n\tchain input { type filter hook input priority -5; policy accept; ip saddr @${NAMES.setName} counter drop; }\n\tchain forward { type filter hook forward priority -5; policy accept; ip saddr @${NAMES.setName} counter drop; }\n}\n`);
  },
  marked: async (ns) => (await ns.exec('nft', ['-t', 'list', 'table', 'inet', NAMES.tableName])).includes('comment "wcf-agent"'),
  wipe: async (ns) => void (await ns.exec('nft', ['delete', 'table', 'inet', NAMES.tableName])),
  wipedRepair: `nft table inet ${NAMES.tableName}`,
  corrupt: (inner) =>
    wrapRunner(inner, ({ file, args, input }) =>
      file === 'nft' && args[0] === '-f' ? { input: `${input ?? ''}add element inet ${NAMES.tableName} ${NAMES.setName} { ${BAD} }\n` } : undefined,
    ),
  async checkApplied(ns) {
    const kernel = await nftElements(ns);
    expect(kernel.get(ADDR.net24)).toEqual({});
    expect(kernel.get(ADDR.blocked)?.timeout).toBe(300);
    const chains = await ns.exec('nft', ['-t', 'list', 'table', 'inet', NAMES.tableName]);
    // Before connection tracking: one chain on prerouting at raw's priority sees what INPUT and FORWARD see.
    expect(chains).toMatch(/chain prerouting \{\n\s+type filter hook prerouting priority raw; policy accept;\n\s+ip saddr @wcf-blocklist iif != "lo" update @wcf-blocklist-in \{ ip saddr \} update @wcf-blocklist-drops \{ meta nfproto \} counter packets \d+ bytes \d+ drop/);
    expect(chains.match(/^\s+chain /gm)).toHaveLength(1);
    // For each of the two sets (addresses, networks): the counted block, and the block for a full hits set.
    expect(chains.match(/ drop$/gm)).toHaveLength(4);
  },
};

/** iptables-restore refuses the whole block (one commit) when one line is bad. */
function corruptRestore(restore: string) {
  return (inner: CommandRunner) =>
    wrapRunner(inner, ({ file, input }) =>
      file === restore ? { input: (input ?? '').replace('COMMIT', `-A ${NAMES.chainName} -s ${BAD} -j DROP\nCOMMIT`) } : undefined,
    );
}

const ipset: ContractBackend = {
  title: 'ipset',
  create: (o) => new IpsetPlugin(o),
  runner: (ns) => ns.runner(),
  kernel: async (ns) => [...(await ipsetEntries(ns)).keys()],
  // Remaining timeouts tick down from one listing to the next: compared without their value.
  snapshot: async (ns) => {
    const s = await snapshot(ns);
    return { ...s, ipset: s.ipset.replace(/ timeout [1-9]\d*(?= |$)/gm, ' timeout N') };
  },
  async foreignObjects(ns) {
    await ns.exec('iptables', ['-N', 'USER-CHAIN']);
    await ns.exec('iptables', ['-A', 'USER-CHAIN', '-s', '203.0.113.50', '-j', 'ACCEPT']);
    await ns.exec('iptables', ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'ACCEPT']);
    await ns.exec('iptables', ['-A', 'FORWARD', '-j', 'USER-CHAIN']);
    await ns.exec('ipset', ['create', 'unrelated', 'hash:ip']);
    await ns.exec('ipset', ['add', 'unrelated', '203.0.113.1']);
    await ns.exec('nft', ['add', 'table', 'inet', 'unrelated']);
    await ns.exec('nft', ['add', 'chain', 'inet', 'unrelated', 'c', '{ type filter hook input priority 10; policy accept; }']);
    await ns.exec('nft', ['add', 'rule', 'inet', 'unrelated', 'c', 'tcp', 'dport', '23', 'drop']);
  },
  async wipe(ns) {
    await ns.exec('iptables', ['-F']);
    await ns.exec('iptables', ['-X', NAMES.chainName]);
    await ns.exec('ipset', ['destroy', NAMES.setName]);
  },
  wipedRepair: `ipset set ${NAMES.setName}`,
  async foreignUnderOurNames(ns) {
    // An admin's allow-set (no timeouts), and their rule using it.
    await ns.exec('ipset', ['create', FOREIGN_NAMES.setName, 'hash:net']);
    await ns.exec('ipset', ['add', FOREIGN_NAMES.setName, '192.0.2.0/24']);
    await ns.exec('iptables', ['-A', 'INPUT', '-m', 'set', '--match-set', FOREIGN_NAMES.setName, 'src', '-j', 'ACCEPT']);
    return `ipset set ${FOREIGN_NAMES.setName}`;
  },
  async legacyObjects(ns) {
    await ns.exec('ipset', ['create', NAMES.setName, 'hash:net', 'family', 'inet', 'hashsize', '1024', 'maxelem', '65536', 'timeout', '0']);
    await ns.exec('ipset', ['add', NAMES.setName, '198.51.100.77']);
    await ns.exec('iptables', ['-N', NAMES.chainName]);
    await ns.exec('iptables', ['-A', NAMES.chainName, '-m', 'set', '--match-set', NAMES.setName, 'src', '-j', 'DROP']);
    for (const h of ['FORWARD', 'INPUT']) await ns.exec('iptables', ['-I', h, '1', '-j', NAMES.chainName]);
  },
  marked: async (ns) =>
    (await ns.exec('ipset', ['save', NAMES.setName])).includes('nomatch comment "wcf-agent"') && (await hookCount(ns, 'INPUT')) === 1,
  // ipset restore stops at the first bad line: one right after the temp set's creation.
  corrupt: (inner) =>
    wrapRunner(inner, ({ file, args, input }) =>
      file === 'ipset' && args.includes('restore') ? { input: (input ?? '').replace('\n', `\nadd ${NAMES.setName}-tmp ${BAD}\n`) } : undefined,
    ),
  async checkApplied(ns) {
    const kernel = await ipsetEntries(ns);
    expect(kernel.get(ADDR.net24)).toBe(0);
    expect(kernel.get(ADDR.blocked)).toBeGreaterThan(290);
    expect(kernel.get(ADDR.blocked)).toBeLessThanOrEqual(300);
    const rules = await ns.exec('iptables', ['-S', NAMES.chainName]);
    expect(rules).toContain(`-A ${NAMES.chainName} ! -i lo ! -o lo -m set --match-set ${NAMES.setName} src -j DROP`);
    const agentRules = rules.split('\n').filter((l) => l.startsWith('-A'));
    expect(agentRules[0]).toBe(`-A ${NAMES.chainName} -m comment --comment wcf-agent`); // the ownership marker first
    expect(agentRules).toHaveLength(4); // marker, record the hit, counted block, block
    // The set carries the ownership marker, an element that can match nothing.
    expect(await ns.exec('ipset', ['save', NAMES.setName])).toContain(`add ${NAMES.setName} 255.255.255.255 timeout 0 nomatch comment "wcf-agent"`);
    expect(await hookCount(ns, 'INPUT')).toBe(1);
    expect(await hookCount(ns, 'FORWARD')).toBe(1);
    expect((await ns.exec('iptables', ['-S', 'INPUT'])).split('\n')[1]).toBe(hookRule('INPUT'));
    expect((await ns.exec('ipset', ['list', '-n'])).split('\n').filter(Boolean)).toEqual([NAMES.setName, `${NAMES.setName}-in`]); // no temp set left
  },
};

function iptablesBackend(title: string, tools: { iptables: string; restore: string; save: string }): ContractBackend {
  // The plugin runs `iptables` and `iptables-restore`; this variant runs the named tools instead.
  const rename: Record<string, string> = { iptables: tools.iptables, 'iptables-restore': tools.restore };
  const runner = (ns: Netns): CommandRunner => {
    const inner = ns.runner();
    return { run: (file, args, o) => inner.run(rename[file] ?? file, args, o) };
  };
  return {
    title,
    create: (o) => new IptablesPlugin(o),
    runner,
    kernel: (ns) => chainSources(ns, tools.iptables),
    async snapshot(ns) {
      const s = await snapshot(ns);
      const save = (await ns.exec(tools.save, [])).split('\n').filter((l) => !l.startsWith('#')).map((l) => l.replace(/\[\d+:\d+\]$/, '[0:0]'));
      return { ...s, save: save.join('\n') };
    },
    async foreignObjects(ns) {
      await ns.exec(tools.iptables, ['-N', 'USER-CHAIN']);
      await ns.exec(tools.iptables, ['-A', 'USER-CHAIN', '-s', '203.0.113.50', '-j', 'ACCEPT']);
      await ns.exec(tools.iptables, ['-A', 'INPUT', '-p', 'tcp', '--dport', '22', '-j', 'ACCEPT']);
      await ns.exec(tools.iptables, ['-A', 'FORWARD', '-j', 'USER-CHAIN']);
      await ns.exec('nft', ['add', 'table', 'inet', 'unrelated']);
      await ns.exec('ipset', ['create', 'unrelated', 'hash:net']);
    },
    async wipe(ns) {
      await ns.exec(tools.iptables, ['-F']);
      await ns.exec(tools.iptables, ['-X', NAMES.chainName]);
    },
    wipedRepair: `iptables chain ${NAMES.chainName}`,
    async foreignUnderOurNames(ns) {
      // An admin's chain, with a jump to it that looks exactly like the hook the agent used to write.
      await ns.exec(tools.iptables, ['-N', FOREIGN_NAMES.chainName]);
      await ns.exec(tools.iptables, ['-A', FOREIGN_NAMES.chainName, '-s', '192.0.2.0/24', '-j', 'ACCEPT']);
      await ns.exec(tools.iptables, ['-A', 'INPUT', '-j', FOREIGN_NAMES.chainName]);
      return `iptables chain ${FOREIGN_NAMES.chainName}`;
    },
    async legacyObjects(ns) {
      await ns.exec(tools.iptables, ['-N', NAMES.chainName]);
      await ns.exec(tools.iptables, ['-A', NAMES.chainName, '-s', '198.51.100.77/32', '-j', 'DROP']);
      for (const h of ['FORWARD', 'INPUT']) await ns.exec(tools.iptables, ['-I', h, '1', '-j', NAMES.chainName]);
    },
    marked: async (ns) =>
      (await ns.exec(tools.iptables, ['-S', NAMES.chainName])).includes(`-A ${NAMES.chainName} -m comment --comment wcf-agent`) && (await hookCount(ns, 'INPUT', tools.iptables)) === 1,
    corrupt: corruptRestore('iptables-restore'),
    async checkApplied(ns, logs) {
      expect(await hookCount(ns, 'INPUT', tools.iptables)).toBe(1);
      expect(await hookCount(ns, 'FORWARD', tools.iptables)).toBe(1);
      expect(logs.some((l) => String(l.msg).includes('no kernel timeouts'))).toBe(true);
    },
  };
}

contractSuite(nftables);
contractSuite(ipset);
contractSuite(iptablesBackend('iptables', { iptables: 'iptables', restore: 'iptables-restore', save: 'iptables-save' }));
// Debian installs the legacy variant beside the nf_tables one (both come with its iptables package); the agent
// runs whichever `iptables` is. Without it the suite fails, and says why: a green run must mean it ran.
const LEGACY_TOOLS = ['iptables-legacy', 'iptables-legacy-restore', 'iptables-legacy-save'];
const missingLegacy = LEGACY_TOOLS.filter((tool) => !['/usr/sbin', '/sbin', '/usr/bin'].some((dir) => existsSync(`${dir}/${tool}`)));
if (missingLegacy.length === 0) {
  contractSuite(iptablesBackend('iptables-legacy', { iptables: 'iptables-legacy', restore: 'iptables-legacy-restore', save: 'iptables-legacy-save' }));
} else {
  describe('iptables-legacy: firewall plugin contract on real netfilter', () => {
    it('needs the legacy tools', () => {
      throw new Error(`${missingLegacy.join(', ')} not found: install the iptables package (Debian ships the legacy variant in it); scripts/test.sh does as root`);
    });
  });
}
