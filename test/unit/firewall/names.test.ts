import { describe, expect, it } from 'vitest';
import { CHAIN_NAME_MAX, SET_NAME_MAX, tempSetName, validateOwnedNames } from '../../../src/firewall/names.js';

const ok = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' };

describe('validateOwnedNames', () => {
  it('accepts the defaults', () => {
    expect(validateOwnedNames(ok, ['INPUT', 'FORWARD'])).toEqual([]);
    expect(validateOwnedNames(ok, ['INPUT', 'FORWARD', 'OUTPUT', 'DOCKER-USER'])).toEqual([]);
  });

  it('limits the set name so the temp set used for swaps fits in ipset’s 31 characters', () => {
    expect(SET_NAME_MAX).toBe(27);
    const longest = 'a'.repeat(27);
    expect(tempSetName(longest).length).toBe(31);
    expect(validateOwnedNames({ ...ok, setName: longest }, ['INPUT'])).toEqual([]);
    const problems = validateOwnedNames({ ...ok, setName: 'a'.repeat(28) }, ['INPUT']);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^set_name: .*at most 27.*-tmp/);
  });

  it('limits the chain name to iptables’ 28 characters', () => {
    expect(CHAIN_NAME_MAX).toBe(28);
    expect(validateOwnedNames({ ...ok, chainName: 'C'.repeat(28) }, ['INPUT'])).toEqual([]);
    expect(validateOwnedNames({ ...ok, chainName: 'C'.repeat(29) }, ['INPUT'])[0]).toMatch(/^chain_name: .*at most 28/);
  });

  it('refuses characters that could break out of a script or command line', () => {
    for (const bad of ['', 'has space', 'semi;colon', 'brace}', '-dash', '1digit', 'quote"', 'new\nline', 'ünï']) {
      expect(validateOwnedNames({ ...ok, setName: bad }, ['INPUT']).some((p) => p.startsWith('set_name:'))).toBe(true);
      expect(validateOwnedNames({ ...ok, chainName: bad }, ['INPUT']).some((p) => p.startsWith('chain_name:'))).toBe(true);
      expect(validateOwnedNames({ ...ok, tableName: bad }, ['INPUT']).some((p) => p.startsWith('table_name:'))).toBe(true);
    }
    expect(validateOwnedNames({ ...ok, tableName: 'wcf-agent' }, ['INPUT'])[0]).toMatch(/^table_name:/);
    expect(validateOwnedNames({ ...ok, tableName: 'x'.repeat(65) }, ['INPUT'])[0]).toMatch(/^table_name: .*longer than 64/);
  });

  it('refuses built-in chains, targets and nft keywords as names', () => {
    expect(validateOwnedNames({ ...ok, chainName: 'INPUT' }, ['FORWARD'])[0]).toMatch(/^chain_name: .*built-in/);
    expect(validateOwnedNames({ ...ok, chainName: 'DROP' }, ['INPUT'])[0]).toMatch(/^chain_name:/);
    expect(validateOwnedNames({ ...ok, chainName: 'DOCKER-USER' }, ['INPUT'])[0]).toMatch(/^chain_name:/);
    expect(validateOwnedNames({ ...ok, tableName: 'filter' }, ['INPUT'])[0]).toMatch(/^table_name: .*keyword/);
    expect(validateOwnedNames({ ...ok, setName: 'counter' }, ['INPUT'])[0]).toMatch(/^set_name: .*keyword/);
  });

  it('refuses the names other firewall managers use, whatever the case', () => {
    const cases: Array<[keyof typeof ok, string]> = [
      ['tableName', 'firewalld'], ['tableName', 'FirewallD'], ['chainName', 'ufw-user-input'], ['chainName', 'UFW-before-input'],
      ['chainName', 'DOCKER-ISOLATION-STAGE-3'], ['setName', 'docker_nets'], ['chainName', 'f2b-sshd'], ['setName', 'fail2ban-ssh'],
      ['setName', 'crowdsec-blacklists'], ['tableName', 'crowdsec'], ['chainName', 'LIBVIRT_INP'], ['chainName', 'KUBE-SERVICES'],
      ['chainName', 'cali-INPUT'], ['chainName', 'CILIUM_INPUT'], ['chainName', 'nixos-fw'], ['tableName', 'nixos_fw_x'],
      ['chainName', 'prerouting'], ['tableName', 'nat'],
    ];
    for (const [key, name] of cases) {
      const path = { setName: 'set_name', chainName: 'chain_name', tableName: 'table_name' }[key];
      const problems = validateOwnedNames({ ...ok, [key]: name }, ['INPUT']);
      expect(problems, name).toHaveLength(1);
      expect(problems[0], name).toMatch(new RegExp(`^${path}: ${JSON.stringify(name)} `));
    }
    // Names that merely contain a manager's name are the operator's own.
    expect(validateOwnedNames({ ...ok, chainName: 'MY-DOCKER-BLOCK', setName: 'not-ufw', tableName: 'my_kube' }, ['INPUT'])).toEqual([]);
  });

  it('checks hook chains: known names only, no duplicates, at least one', () => {
    expect(validateOwnedNames(ok, [])).toEqual(['hook_chains: give at least one chain (INPUT, FORWARD, OUTPUT, DOCKER-USER)']);
    expect(validateOwnedNames(ok, ['INPUT', 'input', 'PREROUTING', 'INPUT'])).toEqual([
      'hook_chains.1: "input" is not a chain the agent can hook into; use one of INPUT, FORWARD, OUTPUT, DOCKER-USER',
      'hook_chains.2: "PREROUTING" is not a chain the agent can hook into; use one of INPUT, FORWARD, OUTPUT, DOCKER-USER',
      'hook_chains.3: "INPUT" is listed twice',
    ]);
  });
});
