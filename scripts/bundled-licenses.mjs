// Prints the npm packages bundled into the single binary, one a line, as
// ` name version: license`: the npm components of the binary's SBOM (scripts/sbom.mjs), which
// lists exactly what esbuild bundled. The .deb's copyright file and the RPM's licence notice
// list them.
//
//   node scripts/bundled-licenses.mjs SBOM.cdx.json
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/bundled-licenses.mjs SBOM.cdx.json');
  process.exit(2);
}
const bom = JSON.parse(readFileSync(file, 'utf8'));
const lines = (bom.components ?? [])
  // The Node runtime is named on its own in both notices.
  .filter((c) => c.purl?.startsWith('pkg:npm/') && c.name !== 'node')
  .map((c) => {
    const name = c.group ? `${c.group}/${c.name}` : c.name;
    const licence = (c.licenses ?? []).map((l) => l.license?.id ?? l.license?.name ?? l.expression).filter(Boolean).join(' AND ') || 'see the package';
    return ` ${name} ${c.version}: ${licence}`;
  });
for (const l of lines.sort()) console.log(l);
