// Prints the npm packages bundled into the single binary, one a line, as
// ` name version: license`: the production dependency tree of package-lock.json. The
// .deb's copyright file and the RPM's licence notice list them.
//
//   node scripts/bundled-licenses.mjs
import { readFileSync } from 'node:fs';

const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url), 'utf8'));
const seen = new Map();
for (const [key, p] of Object.entries(lock.packages ?? {})) {
  if (!key || p.dev || p.devOptional || p.link) continue;
  const name = key.slice(key.lastIndexOf('node_modules/') + 13);
  seen.set(`${name} ${p.version}`, p.license ?? 'see the package');
}
for (const k of [...seen.keys()].sort()) console.log(` ${k}: ${seen.get(k)}`);
