// src/config/descriptions.ts is where every config.json key is described for the man page
// wcf-agent.json(5) and docs/configuration.md: it must describe exactly the schema's keys, and
// what it says must not name a key that does not exist (a renamed key left behind in a sentence).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_KEY_DOCS, CONFIG_SECTIONS } from '../../../src/config/descriptions.js';
import { configSchema } from '../../../src/config/schema.js';
import { configKeyRows } from '../../../src/cli/man/config-keys.js';
import { TABLE_END, TABLE_START, configTablesMarkdown, withConfigTables } from '../../../src/cli/man/config-table.js';

const ROOT = join(import.meta.dirname, '../../..');
const schemaKeys = Object.keys(configSchema.shape).sort();
const described = Object.keys(CONFIG_KEY_DOCS).sort();

describe('config key descriptions', () => {
  it('describe every key of the schema, and no key the schema does not have', () => {
    expect(schemaKeys.length).toBeGreaterThan(40);
    expect(schemaKeys.filter((k) => !described.includes(k))).toEqual([]);
    expect(described.filter((k) => !schemaKeys.includes(k))).toEqual([]);
  });

  it('put each key in a known section, with a meaning of its own', () => {
    const meanings = new Set<string>();
    for (const [key, doc] of Object.entries(CONFIG_KEY_DOCS)) {
      expect(Object.keys(CONFIG_SECTIONS), key).toContain(doc.section);
      expect(doc.meaning.length, key).toBeGreaterThan(10);
      expect(meanings.has(doc.meaning), `${key}: the same meaning as another key`).toBe(false);
      meanings.add(doc.meaning);
    }
  });

  // A word in backticks shaped like a key (lower case with an underscore) must be one.
  it('name, in backticks, only keys that exist', () => {
    const named: { key: string; word: string }[] = [];
    for (const [key, doc] of Object.entries(CONFIG_KEY_DOCS)) {
      const text = `${doc.meaning} ${'absent' in doc ? doc.absent : ''}`;
      for (const m of text.matchAll(/`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?::[^`]*)?`/g)) named.push({ key, word: m[1]! });
    }
    expect(named.length, 'some descriptions name other keys').toBeGreaterThan(5);
    expect(named.filter((n) => !schemaKeys.includes(n.word))).toEqual([]);
  });

  it('give what applies when a key is absent exactly where the schema has no default', () => {
    const rows = configKeyRows(); // throws on a key with both or neither
    expect(rows.map((r) => r.key).sort()).toEqual(schemaKeys);
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(byKey.maximum_rules).toMatchObject({ type: 'integer 1..2000000', default: '`10000`' });
    expect(byKey.hook_chains).toMatchObject({ type: 'array of strings', default: '`["INPUT","FORWARD"]`' });
    expect(byKey.plugin!.type).toBe('one of `auto`, `ipset`, `nftables`, `iptables`, `dry-run`');
    expect(byKey.agid!.default).toBe('required');
    expect(byKey.base_url!.type).toBe('URL');
  });

  it("are what docs/configuration.md's key tables say (regenerate: npx tsx scripts/man.ts --docs)", () => {
    const page = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    expect(page).toContain(TABLE_START);
    expect(page).toContain(TABLE_END);
    expect(page).toContain(configTablesMarkdown());
    expect(withConfigTables(page)).toBe(page);
  });
});
