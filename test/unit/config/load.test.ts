import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, resolveConfigPath } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/errors.js';

const base = { agid: 'a1', base_url: 'http://127.0.0.1:1/api/v1', token: 't' };
const parse = (o: unknown) => parseConfig(JSON.stringify(o), '/etc/wcf-agent/config.json');
function problems(o: unknown): string[] {
  try {
    parse(o);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('config loading', () => {
  it('fills defaults for a minimal file', () => {
    const c = parse(base);
    expect(c).toMatchObject({ plugin: 'auto', set_name: 'wcf-blocklist', chain_name: 'WCF-AGENT', table_name: 'wcf_agent', min_prefix: 8, auth_scheme: 'bearer' });
    expect(c.token).toBe('t');
  });

  it('loads config.json.example as shipped', () => {
    const c = loadConfig(join(import.meta.dirname, '../../../config.json.example'));
    expect(c.agid).toBe('REPLACE-WITH-AGENT-ID');
  });

  it('reports every problem as one path: message line', () => {
    const p = problems({ ...base, base_url: 'ftp://x', min_prefix: 40, allowlist: ['10.0.0.1', '127.1'], plugin: 'pf', maximun_rules: 5 });
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^base_url: /),
        expect.stringMatching(/^min_prefix: /),
        expect.stringMatching(/^allowlist\.1: .*127\.1/),
        expect.stringMatching(/^plugin: /),
        'maximun_rules: unknown key',
      ]),
    );
  });

  it('requires token or token_file, not both', () => {
    expect(problems({ agid: 'a', base_url: base.base_url })).toEqual(['token: one of token or token_file is required']);
    expect(problems({ ...base, token_file: '/x' })).toEqual(['token_file: give token or token_file, not both']);
  });

  it('reads token_file relative to the config file and trims it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-cfg-'));
    writeFileSync(join(dir, 'token'), 'secret\n');
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ agid: 'a', base_url: base.base_url, token_file: 'token', state_dir: 'state' }));
    const c = loadConfig(join(dir, 'config.json'));
    expect(c.token).toBe('secret');
    expect(c.state_dir).toBe(join(dir, 'state'));
  });

  it('rejects names longer than the kernel allows', () => {
    const p = problems({ ...base, set_name: 'x'.repeat(40), chain_name: 'C'.repeat(40) });
    expect(p.some((l) => l.startsWith('set_name'))).toBe(true);
    expect(p.some((l) => l.startsWith('chain_name'))).toBe(true);
  });

  it('says clearly when the file is missing or not JSON', () => {
    expect(() => loadConfig('/nonexistent/wcf.json')).toThrow(/cannot read config file \/nonexistent\/wcf.json: no such file/);
    expect(() => parseConfig('{"agid": ', '/x.json')).toThrow(/not valid JSON/);
  });

  it('resolves the path from the flag, then WCF_AGENT_CONFIG, then /etc', () => {
    expect(resolveConfigPath('/a.json', { WCF_AGENT_CONFIG: '/b.json' })).toBe('/a.json');
    expect(resolveConfigPath(undefined, { WCF_AGENT_CONFIG: '/b.json' })).toBe('/b.json');
    expect(resolveConfigPath(undefined, {})).toBe('/etc/wcf-agent/config.json');
  });
});
