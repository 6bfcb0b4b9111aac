/**
 * Writes the man pages wcf-agent(8) and wcf-agent.json(5) from the program's own command
 * definitions (src/cli/main.ts) and the config schema with its descriptions
 * (src/config/descriptions.ts), and keeps docs/configuration.md's key tables in step.
 *
 *   npx tsx scripts/man.ts --out DIR     DIR/man8/wcf-agent.8 and DIR/man5/wcf-agent.json.5 (roff, not compressed)
 *   npx tsx scripts/man.ts --docs        rewrite the key tables of docs/configuration.md
 *   npx tsx scripts/man.ts --check-docs  exit 1 when those tables are not current
 *   npx tsx scripts/man.ts --completion ROOT  the bash, zsh and fish completion scripts (what
 *                                        `wcf-agent completion SHELL` prints), under ROOT at the
 *                                        paths their shells load them from (/usr/share/...)
 *
 * scripts/build-deb.sh and scripts/install.sh run it with --out and gzip the pages (`gzip -9n`),
 * and with --completion.
 * The date on the pages: SOURCE_DATE_EPOCH, else the last commit's, else today (UTC).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildProgram } from '../src/cli/main.js';
import { COMPLETION_FILES, SHELLS, completionScript } from '../src/cli/completion/index.js';
import { commandsPage } from '../src/cli/man/commands-page.js';
import { configPage } from '../src/cli/man/config-page.js';
import { withConfigTables } from '../src/cli/man/config-table.js';
import { AGENT_VERSION } from '../src/version.js';

const ROOT = join(import.meta.dirname, '..');
const DOCS_PAGE = join(ROOT, 'docs/configuration.md');

function pageDate(): string {
  let seconds = Number(process.env.SOURCE_DATE_EPOCH);
  if (!Number.isFinite(seconds) || process.env.SOURCE_DATE_EPOCH === '') {
    try {
      seconds = Number(execFileSync('git', ['-C', ROOT, 'log', '-1', '--format=%ct'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    } catch {
      seconds = NaN;
    }
  }
  const at = Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date();
  return at.toISOString().slice(0, 10);
}

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    docs: { type: 'boolean', default: false },
    'check-docs': { type: 'boolean', default: false },
    completion: { type: 'string' },
  },
});

if (!values.out && !values.docs && !values['check-docs'] && !values.completion) {
  process.stderr.write('usage: npx tsx scripts/man.ts --out DIR | --docs | --check-docs | --completion ROOT\n');
  process.exit(2);
}

if (values.out) {
  const info = { date: pageDate(), version: AGENT_VERSION };
  mkdirSync(join(values.out, 'man8'), { recursive: true });
  mkdirSync(join(values.out, 'man5'), { recursive: true });
  writeFileSync(join(values.out, 'man8/wcf-agent.8'), commandsPage(buildProgram(), info));
  writeFileSync(join(values.out, 'man5/wcf-agent.json.5'), configPage(info));
}

if (values.completion) {
  for (const shell of SHELLS) {
    const file = join(values.completion, COMPLETION_FILES[shell]);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, completionScript(buildProgram(), shell));
  }
}

if (values.docs || values['check-docs']) {
  const page = readFileSync(DOCS_PAGE, 'utf8');
  const current = withConfigTables(page);
  if (values.docs) {
    if (current !== page) writeFileSync(DOCS_PAGE, current);
  } else if (current !== page) {
    process.stderr.write('docs/configuration.md: the key tables are not current; run: npx tsx scripts/man.ts --docs\n');
    process.exit(1);
  }
}
