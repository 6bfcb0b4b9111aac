// Every config.json key the schema accepts is documented in config.json.example and in the tables
// of docs/configuration.md, and neither documents a key the schema would reject.
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

/** The first column of every table in docs/configuration.md: every backticked name in it. */
function documentedKeys(): string[] {
  const page = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
  expect(page, 'docs/configuration.md starts with "# Configuration"').toMatch(/^# Configuration\n/);
  const keys: string[] = [];
  for (const line of page.split('\n')) {
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

  it('the tables of docs/configuration.md list every key, and only keys the schema knows', () => {
    const documented = documentedKeys();
    expect(schemaKeys.filter((k) => !documented.includes(k))).toEqual([]);
    expect(documented.filter((k) => !schemaKeys.includes(k))).toEqual([]);
  });
});
