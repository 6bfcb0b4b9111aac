import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../helpers/packaging.js';

/**
 * The documentation files a host gets in /usr/share/doc/wcf-agent (scripts/doc-tree.mjs), read
 * from the repository here: README.md, the example config it links to, and docs/ with its charts.
 */
function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => (statSync(join(ROOT, dir, name)).isDirectory() ? walk(join(dir, name)) : [join(dir, name)]));
}

export const DOC_FILES: readonly string[] = ['README.md', 'config.json.example', ...walk('docs').filter((f) => /\.(md|svg|json)$/.test(f))].sort();
