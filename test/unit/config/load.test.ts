import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, resolveConfigPath } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/errors.js';
import { checkConfiguredNames } from '../../../src/firewall/names.js';

const base = { agid: 'a1', base_url: 'http://127.0.0.1:1/api/v1', token: 't' };
// As every command loads it: the shape, then the owned names where they meet the firewall.
const parse = (o: unknown) => {
  const config = parseConfig(JSON.stringify(o), '/etc/wcf-agent/config.json');
  checkConfiguredNames(config);
  return config;
};
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

  it('refuses config.json.example as shipped, naming each placeholder key', () => {
    const example = join(import.meta.dirname, '../../../config.json.example');
    expect(() => loadConfig(example)).toThrow(ConfigError);
    try {
      loadConfig(example);
    } catch (err) {
      expect((err as ConfigError).problems).toEqual([
        'agid: still the example\'s placeholder "REPLACE-WITH-AGENT-ID"; set the real value',
        'token: still the example\'s placeholder "REPLACE-WITH-API-TOKEN"; set the real value',
        "base_url: api.example.net is the example's placeholder host; set your API's address",
      ]);
    }
  });

  it('a base_url that is not the API root (/api/v1) names the key', () => {
    expect(problems({ ...base, base_url: 'https://intel.corp.test/' })).toEqual(['base_url: must be the API root, ending in /api/v1 (got path "/")']);
    expect(problems({ ...base, base_url: 'https://intel.corp.test/api/v2' })).toEqual([
      'base_url: must be the API root, ending in /api/v1 (got path "/api/v2")',
    ]);
    expect(parse({ ...base, base_url: 'https://intel.corp.test/prefix/api/v1/' }).base_url).toBe('https://intel.corp.test/prefix/api/v1/');
  });

  it('a proxy that is not an http:// or https:// URL is refused, naming proxy (it used to be ignored: calls went around it)', () => {
    const message = 'proxy: must be an http:// or https:// URL, e.g. http://proxy.corp.example:3128';
    expect(problems({ ...base, proxy: 'socks5://127.0.0.1:1080' })).toEqual([message]);
    expect(problems({ ...base, proxy: 'proxy.corp.example:3128' })).toEqual([message]);
    expect(parse({ ...base, proxy: 'https://user:pw@proxy.corp.example:3128' }).proxy).toBe('https://user:pw@proxy.corp.example:3128');
  });

  it('a placeholder in token_file names token_file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-cfg-'));
    writeFileSync(join(dir, 'token'), 'REPLACE-WITH-API-TOKEN\n');
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ agid: 'a', base_url: base.base_url, token_file: 'token' }));
    expect(() => loadConfig(join(dir, 'config.json'))).toThrow(/token_file: .*token holds the example's placeholder "REPLACE-WITH-API-TOKEN"/);
  });

  it('an unknown key close to a known one gets a "did you mean"', () => {
    expect(problems({ ...base, maximum_rule: 5 })).toEqual(['maximum_rule: unknown key (did you mean maximum_rules?)']);
    expect(problems({ ...base, scoer_threshold: 5 })).toEqual(['scoer_threshold: unknown key (did you mean score_threshold?)']);
    expect(problems({ ...base, colour: 'red' })).toEqual(['colour: unknown key']);
  });

  it('reports every problem as one path: message line', () => {
    const p = problems({ ...base, base_url: 'ftp://x', min_prefix: 40, allowlist: ['10.0.0.1', '127.1'], plugin: 'pf', maximun_rules: 5 });
    expect(p).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^base_url: /),
        expect.stringMatching(/^min_prefix: /),
        expect.stringMatching(/^allowlist\.1: .*127\.1/),
        expect.stringMatching(/^plugin: /),
        'maximun_rules: unknown key (did you mean maximum_rules?)',
      ]),
    );
  });

  it('requires token or token_file, not both', () => {
    expect(problems({ agid: 'a', base_url: base.base_url })).toEqual([expect.stringMatching(/^token: missing: the API token from the platform's agent page, as token, or in a file of its own named by token_file/)]);
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
    expect(() => parseConfig('{"agid": ', '/x.json')).toThrow(/^\/x\.json:1:10: unexpected end of file$/);
  });

  it('a JSON syntax error is one FILE:LINE:COLUMN line with no raw newline', () => {
    const text = '{\n  "agid": "a",\n  "allowlist": ["10.0.0.1",\n  ]\n}\n';
    expect(() => parseConfig(text, '/etc/wcf-agent/config.json')).toThrow(/^\/etc\/wcf-agent\/config\.json:4:3: unexpected '\]'$/);
    expect(() => parseConfig('{"a": 1,}', '/c.json')).toThrow(/^\/c\.json:1:9: unexpected '\}'$/);
    expect(() => parseConfig('{"a":\u0001}', '/c.json')).toThrow(/^\/c\.json:1:6: unexpected 'U\+0001'$/);
    expect(() => parseConfig('{"a": 1, // note\n}', '/c.json')).toThrow(/^\/c\.json:1:10: comments are not allowed in JSON/);
  });

  it('resolves the path from the flag, then WCF_AGENT_CONFIG, then /etc', () => {
    expect(resolveConfigPath('/a.json', { WCF_AGENT_CONFIG: '/b.json' })).toBe('/a.json');
    expect(resolveConfigPath(undefined, { WCF_AGENT_CONFIG: '/b.json' })).toBe('/b.json');
    expect(resolveConfigPath(undefined, {})).toBe('/etc/wcf-agent/config.json');
  });
});
