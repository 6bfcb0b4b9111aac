// Every config.json key the schema accepts is documented in config.json.example and in README's
// configuration table, and neither documents a key the schema would reject.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.js';

const ROOT = join(import.meta.dirname, '../../..');
const schemaKeys = Object.keys(configSchema.shape).sort();

const example = JSON.parse(readFileSync(join(ROOT, 'config.json.example'), 'utf8')) as Record<string, unknown>;
const exampleComments = Object.keys(example)
  .filter((k) => k.startsWith('//') && k.length > 2)
  .map((k) => k.slice(2));
const exampleValues = Object.keys(example).filter((k) => !k.startsWith('//'));

/** The first column of the table under "## Configuration": every backticked name in it. */
function readmeKeys(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Configuration\n');
  expect(start, 'README has a "## Configuration" section').toBeGreaterThan(-1);
  const section = readme.slice(start + 1, readme.indexOf('\n## ', start + 1));
  const keys: string[] = [];
  for (const line of section.split('\n')) {
    const first = /^\|([^|]+)\|/.exec(line)?.[1];
    if (!first || /^\s*-+\s*$/.test(first) || /^\s*key\s*$/.test(first)) continue;
    for (const m of first.matchAll(/`([^`]+)`/g)) keys.push(m[1]!);
  }
  return keys;
}

describe('configuration keys are documented', () => {
  it('the schema has the contract keys (sanity check of the key list)', () => {
    for (const k of ['agid', 'base_url', 'token', 'auth_scheme', 'plugin', 'state_dir', 'allowlist', 'min_prefix', 'set_name']) {
      expect(schemaKeys).toContain(k);
    }
  });

  it('config.json.example has a // comment for every key, and only keys the schema knows', () => {
    expect(schemaKeys.filter((k) => !exampleComments.includes(k))).toEqual([]);
    expect(exampleComments.filter((k) => !schemaKeys.includes(k))).toEqual([]);
    expect(exampleValues.filter((k) => !schemaKeys.includes(k))).toEqual([]);
  });

  it('config.json.example (comments dropped) is a valid configuration', () => {
    const values = Object.fromEntries(Object.entries(example).filter(([k]) => !k.startsWith('//')));
    const r = configSchema.safeParse(values);
    expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
  });

  it("README's configuration table lists every key, and only keys the schema knows", () => {
    const documented = readmeKeys();
    expect(schemaKeys.filter((k) => !documented.includes(k))).toEqual([]);
    expect(documented.filter((k) => !schemaKeys.includes(k))).toEqual([]);
  });
});
