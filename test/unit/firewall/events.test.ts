import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maySetElements, TransactionReader, xtablesEventPlace, type RulesetChange } from '../../../src/firewall/events.js';
import type { PluginName } from '../../../src/firewall/plugin.js';

const NAMES = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' };
const OWN_PID = 4242;

/** Feed `lines` to a reader of the given source; the changes it reported. */
function read(lines: string[], xtables: boolean, plugin: PluginName = 'nftables'): RulesetChange[] {
  const out: RulesetChange[] = [];
  const r = new TransactionReader({ plugin, names: NAMES, xtables, isOwn: (pid) => pid === OWN_PID, onChange: (c) => out.push(c) });
  for (const l of lines) r.line(l);
  return out;
}

describe('xtables-monitor lines', () => {
  it('places an event in the agent’s table, another table, or nowhere (an nft rule it cannot print)', () => {
    expect(xtablesEventPlace('# nft: inet wcf_agent input use 0', 'wcf_agent')).toBe('ours');
    expect(xtablesEventPlace('-t filter -A INPUT -j ACCEPT table wcf_agent inet', 'wcf_agent')).toBe('ours');
    expect(xtablesEventPlace('# nft: inet other d use 0', 'wcf_agent')).toBe('other');
    expect(xtablesEventPlace('# nft: inet wcf_agent_x input use 0', 'wcf_agent')).toBe('other');
    expect(xtablesEventPlace('', 'wcf_agent')).toBe('unknown');
    expect(xtablesEventPlace('   ', 'wcf_agent')).toBe('unknown');
  });

  it('a transaction of another nft process that named only another table may still have changed the agent’s elements', () => {
    // What xtables-monitor printed for `add chain inet other d; delete element inet wcf_agent wcf-blocklist { X }`.
    const changes = read([' EVENT: # nft: inet other d use 0', 'NEWGEN: GENID=10 PID=777 NAME=nft'], true);
    expect(changes).toEqual([{ events: [], by: 'nft (pid 777)', maybe: true, elements: true }]);
  });

  it('a transaction that printed nothing (an element deleted, a set flushed) is reported as maybe', () => {
    expect(read(['NEWGEN: GENID=9 PID=778 NAME=firewalld'], true)).toEqual([{ events: [], by: 'firewalld (pid 778)', maybe: true, elements: true }]);
  });

  it('events in the agent’s table are kept (escaped) and the transaction reported with them', () => {
    const changes = read([' EVENT: # nft: inet wcf_agent input use 0', ' EVENT: # nft: inet other d use 0', 'NEWGEN: GENID=11 PID=779 NAME=nft\u001b[2J'], true);
    expect(changes).toEqual([{ events: ['# nft: inet wcf_agent input use 0'], by: 'nft\\x1b[2J (pid 779)', elements: true }]);
  });

  it('the agent’s own transactions are not reported, and their events are not carried into the next one', () => {
    expect(read([' EVENT: # nft: inet wcf_agent input use 0', `NEWGEN: GENID=12 PID=${OWN_PID} NAME=nft`], true)).toEqual([]);
    const next = read([' EVENT: # nft: inet wcf_agent input use 0', `NEWGEN: GENID=12 PID=${OWN_PID} NAME=nft`, 'NEWGEN: GENID=13 PID=780 NAME=nft'], true);
    expect(next).toEqual([{ events: [], by: 'nft (pid 780)', maybe: true, elements: true }]);
  });

  it('the iptables family cannot write an inet table’s sets: its transactions elsewhere cost nothing', () => {
    for (const name of ['iptables', 'ip6tables', 'iptables-restor', 'iptables-nft', 'ip6tables-resto', 'ebtables', 'arptables-nft', 'xtables-nft-mul']) {
      expect(maySetElements(name), name).toBe(false);
      expect(read([' EVENT: -t filter -A INPUT -j ACCEPT', `NEWGEN: GENID=14 PID=781 NAME=${name}`], true), name).toEqual([]);
    }
    for (const name of ['nft', 'firewalld', 'python3', 'kube-proxy', 'iptablesx', 'my-iptables']) expect(maySetElements(name), name).toBe(true);
  });

  it('lines that are neither events nor generations are ignored', () => {
    expect(read(['garbage', 'NEWGEN: GENID=x PID=1 NAME=nft', ''], true)).toEqual([]);
  });

  it('any line fed to the reader never throws and reports only transactions that end with a generation line', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 80 }), { maxLength: 30 }), (lines) => {
        const changes = read(lines, true);
        const generations = lines.filter((l) => /^NEWGEN: GENID=\d+ PID=\d+ NAME=/.test(l)).length;
        expect(changes.length).toBeLessThanOrEqual(generations);
      }),
    );
  });
});

describe('nft monitor lines', () => {
  it('reports the agent’s table’s events with the process behind them, elements included', () => {
    const changes = read(['delete element inet wcf_agent wcf-blocklist { 198.18.0.1 }', 'add chain inet other d', '# new generation 5 by process 900 (nft)'], false);
    expect(changes).toEqual([{ events: ['delete element inet wcf_agent wcf-blocklist { 198.18.0.1 }'], by: 'nft (pid 900)', elements: true }]);
  });

  it('prints every element change, so a transaction elsewhere is placed and costs nothing', () => {
    expect(read(['add chain inet other d', '# new generation 6 by process 901 (nft)'], false)).toEqual([]);
  });

  it('keeps a few lines of a large transaction and counts the rest', () => {
    const lines = Array.from({ length: 8 }, (_, i) => `add element inet wcf_agent wcf-blocklist { 198.18.0.${i} }`);
    const [c] = read([...lines, '# new generation 7 by process 902 (nft)'], false);
    expect(c!.events).toHaveLength(6);
    expect(c!.events[5]).toBe('… 3 more');
  });

  it('for the iptables backends: the ip filter table, and nothing about elements', () => {
    expect(read(['delete rule ip filter INPUT handle 3', '# new generation 8 by process 903 (iptables-nft)'], false, 'ipset')).toEqual([
      { events: ['delete rule ip filter INPUT handle 3'], by: 'iptables-nft (pid 903)', elements: false },
    ]);
  });

  it('without generation lines (an older nft), pending events are reported when flushed', () => {
    const out: RulesetChange[] = [];
    const r = new TransactionReader({ plugin: 'nftables', names: NAMES, xtables: false, isOwn: () => false, onChange: (c) => out.push(c) });
    r.line('flush set inet wcf_agent wcf-blocklist');
    expect(r.waiting).toBe(1);
    r.flushPending();
    expect(out).toEqual([{ events: ['flush set inet wcf_agent wcf-blocklist'], elements: true }]);
    r.flushPending();
    expect(out).toHaveLength(1);
  });
});
