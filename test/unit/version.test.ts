import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { AGENT_VERSION } from '../../src/version.js';

it('reports the version package.json declares', () => {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
  expect(AGENT_VERSION).toBe(pkg.version);
});
