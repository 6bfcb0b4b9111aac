#!/usr/bin/env node
// The documentation as installed on a host (/usr/share/doc/wcf-agent by the .deb and
// scripts/install.sh): README.md with the pages it links to, laid out as in the repository so
// every link between them still resolves there.
//
//   node scripts/doc-tree.mjs OUTDIR
//
// OUTDIR/README.md, OUTDIR/docs/ (the pages with their charts and figures) and
// OUTDIR/config.json.example (which docs/configuration.md links to). A link to a file that is not
// installed (a test's README, a source file) becomes its text and the path in the source tree,
// so no link on the host leads nowhere. Plain Node, no dependency: install.sh runs it with
// whatever Node the machine has.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2];
if (!out) {
  console.error('usage: node scripts/doc-tree.mjs OUTDIR');
  process.exit(2);
}

/** The files installed, relative to the repository (and to OUTDIR). */
function files() {
  const walk = (dir) =>
    readdirSync(join(ROOT, dir)).flatMap((name) => {
      const path = join(dir, name);
      return statSync(join(ROOT, path)).isDirectory() ? walk(path) : [path];
    });
  return ['README.md', 'config.json.example', ...walk('docs').filter((f) => /\.(md|svg|json)$/.test(f))];
}

const installed = new Set(files());

/** `[text](target)` outside code: a target that is not installed becomes `text (target in the source tree)`. */
function rewrite(page, text) {
  let fence;
  return text
    .split('\n')
    .map((line) => {
      const open = /^\s*(```+|~~~+)/.exec(line)?.[1];
      if (fence) {
        if (open && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
        return line;
      }
      if (open) {
        fence = open;
        return line;
      }
      // Code spans keep their text; a link outside them (its label may hold one) is looked at.
      const spans = [...line.matchAll(/`[^`]*`/g)].map((m) => [m.index, m.index + m[0].length]);
      const inSpan = (i) => spans.some(([a, b]) => i > a && i < b);
      return line.replace(/\[((?:[^\]`]|`[^`]*`)+)\]\(([^)\s#]+)(#[^)\s]*)?\)/g, (whole, label, target, _hash, at) => {
        if (inSpan(at) || /^(https?|mailto):/i.test(target)) return whole;
        const abs = resolve(ROOT, dirname(page), decodeURIComponent(target));
        const rel = relative(ROOT, abs);
        const dir = existsSync(abs) && statSync(abs).isDirectory();
        if (installed.has(rel) || (dir && [...installed].some((f) => f.startsWith(`${rel}/`)))) return whole;
        return label.replaceAll('`', '') === rel || label.replaceAll('`', '') === `${rel}/` ? `\`${rel}\` (in the source tree)` : `${label} (\`${rel}\` in the source tree)`;
      });
    })
    .join('\n');
}

for (const f of installed) {
  const dest = join(out, f);
  mkdirSync(dirname(dest), { recursive: true });
  if (f.endsWith('.md')) writeFileSync(dest, rewrite(f, readFileSync(join(ROOT, f), 'utf8')));
  else cpSync(join(ROOT, f), dest);
}
