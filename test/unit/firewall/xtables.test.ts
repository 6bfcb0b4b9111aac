import { describe, expect, it } from 'vitest';
import { parseEntryChain } from '../../../src/firewall/xtables/rules.js';
import { checkNftStructure } from '../../../src/firewall/nft/table/structure.js';
import { effectiveHooks, parseIptablesS, planHooks, planRemoval } from '../../../src/firewall/xtables/filter.js';

const S = `-P INPUT ACCEPT
-P FORWARD ACCEPT
-P OUTPUT ACCEPT
-N DOCKER-USER
-N WCF-AGENT
-N USER
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A INPUT -j WCF-AGENT
-A FORWARD -j WCF-AGENT
-A FORWARD -j WCF-AGENT
-A OUTPUT -j WCF-AGENT
-A USER -s 203.0.113.9/32 -j WCF-AGENT
-A DOCKER-USER -j RETURN
-A WCF-AGENT -m set --match-set wcf-blocklist src -j DROP
`;

describe('iptables planning', () => {
  const state = parseIptablesS(S);

  it('parses chains and rules', () => {
    expect([...state.chains]).toEqual(['INPUT', 'FORWARD', 'OUTPUT', 'DOCKER-USER', 'WCF-AGENT', 'USER']);
    expect(state.rules.get('FORWARD')).toHaveLength(2);
  });

  it('hooks DOCKER-USER when it exists and FORWARD is hooked', () => {
    expect(effectiveHooks(['INPUT', 'FORWARD'], state)).toEqual(['INPUT', 'FORWARD', 'DOCKER-USER']);
    expect(effectiveHooks(['INPUT'], state)).toEqual(['INPUT']);
    expect(effectiveHooks(['INPUT', 'FORWARD'], parseIptablesS('-P INPUT ACCEPT\n-P FORWARD ACCEPT\n'))).toEqual(['INPUT', 'FORWARD']);
  });

  it('adds missing hooks at position 1, removes duplicates and stale hooks, marks an earlier version’s hooks where they are', () => {
    const plan = planHooks(state, 'WCF-AGENT', ['INPUT', 'FORWARD', 'DOCKER-USER']);
    expect(plan.lines).toEqual([
      '-R INPUT 2 -m comment --comment wcf-agent -j WCF-AGENT',
      '-R FORWARD 1 -m comment --comment wcf-agent -j WCF-AGENT',
      '-D FORWARD 2',
      '-D OUTPUT 1',
      '-I DOCKER-USER 1 -m comment --comment wcf-agent -j WCF-AGENT',
    ]);
    expect(plan.fixes).toEqual(['duplicate hook FORWARD -> WCF-AGENT removed', 'stale hook OUTPUT -> WCF-AGENT removed', 'hook DOCKER-USER -> WCF-AGENT']);
  });

  it('removal deletes exactly the hooks and the chain, never foreign rules', () => {
    const plan = planRemoval(state, 'WCF-AGENT');
    expect(plan.lines).toEqual(['-D INPUT -j WCF-AGENT', '-D FORWARD -j WCF-AGENT', '-D FORWARD -j WCF-AGENT', '-D OUTPUT -j WCF-AGENT', '-F WCF-AGENT']);
    expect(plan.foreign).toEqual(['-A USER -s 203.0.113.9/32 -j WCF-AGENT']);
    expect(plan.unhooked).toEqual(['INPUT', 'FORWARD', 'OUTPUT']);
    const clean = planRemoval(parseIptablesS(S.replace('-A USER -s 203.0.113.9/32 -j WCF-AGENT\n', '')), 'WCF-AGENT');
    expect(clean.lines.slice(-2)).toEqual(['-F WCF-AGENT', '-X WCF-AGENT']);
    expect(planRemoval(parseIptablesS('-P INPUT ACCEPT\n'), 'WCF-AGENT').lines).toEqual([]);
  });

  it('keeps a marked hook where it is and removes marked and unmarked copies', () => {
    const marked = parseIptablesS(
      '-P INPUT ACCEPT\n-N WCF-AGENT\n-A INPUT -s 10.0.0.1/32 -j ACCEPT\n-A INPUT -m comment --comment wcf-agent -j WCF-AGENT\n-A INPUT -j WCF-AGENT\n-A INPUT -m comment --comment wcf-agent -j WCF-AGENT\n',
    );
    expect(planHooks(marked, 'WCF-AGENT', ['INPUT']).lines).toEqual(['-D INPUT 4', '-D INPUT 3']);
    expect(planRemoval(marked, 'WCF-AGENT').lines).toEqual([
      '-D INPUT -m comment --comment wcf-agent -j WCF-AGENT',
      '-D INPUT -m comment --comment wcf-agent -j WCF-AGENT',
      '-D INPUT -j WCF-AGENT',
      '-F WCF-AGENT',
      '-X WCF-AGENT',
    ]);
  });

  it('does not mistake a chain whose name starts with ours for a reference', () => {
    const st = parseIptablesS('-P INPUT ACCEPT\n-N WCF-AGENT\n-N WCF-AGENT2\n-A INPUT -j WCF-AGENT2\n');
    expect(planRemoval(st, 'WCF-AGENT')).toEqual({ lines: ['-F WCF-AGENT', '-X WCF-AGENT'], unhooked: [], foreign: [] });
  });

  it('reads the fallback chain back', () => {
    const lines = ['-A C -s 192.0.2.7/32 ! -i lo ! -o lo -j DROP', '-A C -s 192.0.2.0/24 ! -i lo ! -o lo -j DROP'];
    expect(parseEntryChain(lines, 'C', 'DROP', false, 'inbound')).toEqual({ entries: new Map([['192.0.2.7', undefined], ['192.0.2.0/24', undefined]]), wellFormed: true });
    expect(parseEntryChain(lines, 'C', 'REJECT', false, 'inbound').wellFormed).toBe(false);
    expect(parseEntryChain([...lines, '-A C -j ACCEPT'], 'C', 'DROP', false, 'inbound').wellFormed).toBe(false);
    expect(parseEntryChain(lines, 'C', 'DROP', true, 'inbound').wellFormed).toBe(false);
    const logged = ['-A C -s 192.0.2.7/32 ! -i lo ! -o lo -m limit --limit 10/min -j LOG --log-prefix "wcf-agent: "', '-A C -s 192.0.2.7/32 ! -i lo ! -o lo -j DROP'];
    expect(parseEntryChain(logged, 'C', 'DROP', true, 'inbound').wellFormed).toBe(true);
  });
});

/** What checkNftStructure finds wrong (empty = intact). */
const nftProblems = (json: string, l: Parameters<typeof checkNftStructure>[1]) => checkNftStructure(json, l).problems;

describe('checkNftStructure', () => {
  const layout = { table: 't', set: 's', nets: 's-net', drops: 's-drops', hooks: ['input'] as const, priority: -5, stage: 'filter' as const, inbound: 'all' as const, forwardedOut: true, action: 'DROP' as const, logBlocked: false, direction: 'inbound' as const };
  // The networks' set is keyed on the address and the family (`ip saddr . meta nfproto`).
  const key = (set: string) => (set === '@s-net' ? { concat: [{ payload: { protocol: 'ip', field: 'saddr' } }, { meta: { key: 'nfproto' } }] } : { payload: { protocol: 'ip', field: 'saddr' } });
  const doc = (extra: object[] = [], rules?: object[]) =>
    JSON.stringify({
      nftables: [
        { metainfo: {} },
        { table: { family: 'inet', name: 't' } },
        { set: { name: 's', type: 'ipv4_addr', flags: ['timeout'] } },
        { set: { name: 's-net', type: ['ipv4_addr', 'nf_proto'], flags: ['interval', 'timeout'] } },
        { set: { name: 's-drops', type: 'nf_proto', stmt: [{ counter: null }] } },
        { set: { name: 's-in', type: 'ipv4_addr', flags: ['timeout'], stmt: [{ counter: null }] } },
        { chain: { name: 'input', type: 'filter', hook: 'input', prio: -5, policy: 'accept' } },
        ...(rules ??
          ['@s', '@s-net'].flatMap((set) => [
            {
              rule: {
                chain: 'input',
                expr: [
                  { match: { op: '==', left: key(set), right: set } },
                  { match: { op: '!=', left: { meta: { key: 'iif' } }, right: 'lo' } },
                  { set: { op: 'update', elem: { payload: { protocol: 'ip', field: 'saddr' } }, set: '@s-in' } },
                  { set: { op: 'update', elem: { meta: { key: 'nfproto' } }, set: '@s-drops' } },
                  { counter: {} },
                  { drop: null },
                ],
              },
            },
            {
              rule: {
                chain: 'input',
                expr: [
                  { match: { op: '==', left: key(set), right: set } },
                  { match: { op: '!=', left: { meta: { key: 'iif' } }, right: 'lo' } },
                  { set: { op: 'update', elem: { meta: { key: 'nfproto' } }, set: '@s-drops' } },
                  { counter: {} },
                  { drop: null },
                ],
              },
            },
                    ])),
        ...extra,
      ],
    });
  it('accepts the expected table and reports differences', () => {
    expect(nftProblems(doc(), layout)).toEqual([]);
    expect(nftProblems(doc(), { ...layout, action: 'REJECT' })).toEqual(['rules of nft chain input (differed from expected)', 'nft chain refuse']);
    expect(nftProblems(doc(), { ...layout, direction: 'both' })).toEqual(['nft set s-out']);
    expect(nftProblems(doc(), { ...layout, hooks: ['input', 'forward'] })).toEqual(['nft chain forward']);
    expect(nftProblems(doc([], []), layout)).toEqual(['rule in nft chain input']);
    expect(nftProblems(doc([{ chain: { name: 'x' } }]), layout)).toEqual(['unexpected chain x in nft table t']);
  });
});
