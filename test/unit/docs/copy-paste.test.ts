// Every shell block of README.md and docs/ runs as written, or says first what it needs: read
// line by line as a user would paste it. `npm run X` is a script of package.json; `wcf-agent ...`
// is a command of the program with options it has; a file a line names (relative, in the
// repository or where a `cd` went) exists, or an earlier line of the block makes it (cp, cat >,
// install, mkdir), or a comment before it says where it comes from. The commands that need a
// running host (podman, kubectl, systemctl, ansible) are run by the deployment tests.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';

const ROOT = join(import.meta.dirname, '../../..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const SCRIPTS = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts);
const program = buildProgram();

interface Block {
  readonly page: string;
  readonly line: number;
  readonly text: string;
}

/** The ```sh (and ```bash) blocks of a page. */
function shellBlocks(page: string): Block[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  return [...text.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```/gm)].map((m) => ({ page, line: text.slice(0, m.index).split('\n').length, text: m[1]! }));
}

/** The lines of a block as the shell reads them: continuations joined, here-documents set apart (their bodies are data). */
function logicalLines(block: string): { code: string; comment: string; heredocTo?: string }[] {
  const out: { code: string; comment: string; heredocTo?: string }[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i]!;
    while (line.endsWith('\\') && i + 1 < lines.length) line = line.slice(0, -1) + ' ' + lines[++i]!;
    // A comment: from a # that starts a word, outside quotes (good enough for these blocks).
    const hash = /(^|\s)#/.exec(line.replace(/'[^']*'|"[^"]*"/g, (q) => 'x'.repeat(q.length)));
    const code = (hash ? line.slice(0, hash.index) : line).trim();
    const comment = hash ? line.slice(hash.index).trim() : '';
    const heredoc = /<<-?\s*'?(\w+)'?/.exec(code);
    const target = /(?:^|\s)>\s*(\S+)\s+<</.exec(code)?.[1] ?? /<<-?\s*'?\w+'?\s*>\s*(\S+)/.exec(code)?.[1];
    out.push({ code, comment, heredocTo: heredoc ? (target ?? '') : undefined });
    if (heredoc) while (i + 1 < lines.length && lines[++i]!.trim() !== heredoc[1]) void 0;
  }
  return out;
}

/** Simple commands of a line (split at && || ; |), as words; quotes kept as one word, unquoted. */
function commands(code: string): string[][] {
  return code
    .split(/&&|\|\||;|\|/)
    .map((c) => [...c.trim().matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!))
    .filter((w) => w.length > 0);
}

const REPO_DIRS = ['deploy', 'scripts', 'docs', 'test', 'src', 'packaging', 'systemd'];

/**
 * A word naming a relative file: `./x`, `../x`, a path into the repository's folders, or a name
 * with a file suffix; never a variable, glob, placeholder, option or resource name (`ds/x`).
 */
function relativeFile(word: string, previous?: string): string | undefined {
  const value = word.includes('=') && word.startsWith('-') ? word.slice(word.lastIndexOf('=') + 1) : word;
  if (/[$*<>{}[\]"]|^-|^https?:|^\w+:\/\/|:/.test(value) || isAbsolute(value)) return undefined;
  // The value of an input-file option (ansible -i, kubectl -f, podman load -i) is a file whatever its name.
  const input = previous === '-i' || previous === '-f' || previous === '--inventory';
  if (input || /^\.\.?\//.test(value) || REPO_DIRS.includes(value.split('/')[0]!) || /\.(ya?ml|json|example|deb|tar|md|sh|mjs|ts)$/.test(value)) return value;
  return undefined;
}

/** What is wrong with the `wcf-agent` command `words` (after `wcf-agent`), or undefined. */
function programProblem(words: string[]): string | undefined {
  let cmd: Command = program;
  const names: string[] = [];
  for (const w of words) {
    if (w.startsWith('-')) {
      const flag = w.split('=')[0]!;
      const known = [...cmd.options, ...program.options].some((o) => o.long === flag || o.short === flag) || flag === '--help' || flag === '-h';
      if (!known) return `${['wcf-agent', ...names].join(' ')} has no option ${flag}`;
      continue;
    }
    const sub = cmd.commands.find((c) => c.name() === w);
    if (sub) {
      cmd = sub;
      names.push(w);
    } else if (cmd === program) return `no command ${w}`;
  }
  return undefined;
}

/** Every problem of a block, as `page:line: problem`. */
function blockProblems(block: Block): string[] {
  const problems: string[] = [];
  let cwd = ROOT;
  const made = new Set<string>();
  let said = '';
  for (const { code, comment, heredocTo } of logicalLines(block.text)) {
    const where = `${block.page}:${block.line}: ${code || comment}`;
    for (const words of commands(code)) {
      const bare = words[0] === 'sudo' ? words.slice(1) : words;
      const [tool, ...args] = bare;
      if (tool === 'npm' && args[0] === 'run' && !SCRIPTS.includes(args[1]!)) problems.push(`${where}: npm has no script ${args[1]}`);
      if (tool === 'wcf-agent') {
        const p = programProblem(args);
        if (p) problems.push(`${where}: ${p}`);
      }
      // What the line makes: cp's and install's last word, mkdir's words, a redirection's file.
      if ((tool === 'cp' || tool === 'install') && args.length) made.add(normalize(join(cwd, args.at(-1)!)));
      for (const [i, w] of args.entries()) if (w === '>' && args[i + 1]) made.add(normalize(join(cwd, args[i + 1]!)));
      if (tool === 'mkdir') for (const a of args.filter((a) => !a.startsWith('-'))) made.add(normalize(join(cwd, a)));
      for (const [i, w] of args.entries()) {
        if (tool === 'cp' && i === args.length - 1) continue;
        if ((tool === 'install' || tool === 'mkdir') && i === args.length - 1) continue;
        const file = relativeFile(w, args[i - 1]);
        if (!file || file.startsWith('dist/') || file.includes('/dist/')) continue; // dist/: what the build on the same line writes
        const path = normalize(join(cwd, file));
        if (existsSync(path) || made.has(path) || [...made].some((m) => path.startsWith(`${m}/`))) continue;
        if (said.includes(file)) continue;
        problems.push(`${where}: ${file} does not exist in ${cwd === ROOT ? 'the repository' : cwd}, nothing before makes it, and no comment says where it comes from`);
      }
      if (tool === 'cd' && args[0]) cwd = isAbsolute(args[0]) ? args[0] : normalize(join(cwd, args[0]));
    }
    if (heredocTo) made.add(normalize(join(cwd, heredocTo)));
    said += ` ${comment}`;
  }
  return problems;
}

const BLOCKS = PAGES.flatMap(shellBlocks);

describe('copy-paste blocks of README.md and docs/', () => {
  it('finds the blocks (so the checks below are not vacuous)', () => {
    expect(BLOCKS.length).toBeGreaterThan(8);
    expect(BLOCKS.filter((b) => b.page === 'README.md').length).toBeGreaterThan(5);
  });

  it('each runs as written, or says first what it needs', () => {
    expect(BLOCKS.flatMap(blockProblems)).toEqual([]);
  });

  it('the checks catch what a newcomer met (a missing inventory, a command or option the program lacks, a script npm lacks)', () => {
    const check = (text: string) => blockProblems({ page: 'fixture.md', line: 1, text });
    expect(check('npm run build:deb && cd deploy/ansible\nansible-playbook -i inventory playbook.example.yml --check\n')).toEqual([
      expect.stringMatching(/inventory does not exist in .*deploy\/ansible, nothing before makes it/),
    ]);
    expect(check('cd deploy/ansible\ncp inventory.example inventory\nansible-playbook -i inventory playbook.example.yml\n')).toEqual([]);
    expect(check('# ./token: the API token, in a file of its own\nkubectl create secret generic t --from-file=token=./token\n')).toEqual([]);
    expect(check('sudo wcf-agent plan --jsn\nwcf-agent frobnicate\nnpm run nope\n')).toEqual([
      expect.stringMatching(/wcf-agent plan has no option --jsn/),
      expect.stringMatching(/no command frobnicate/),
      expect.stringMatching(/npm has no script nope/),
    ]);
  });
});

describe('README.md', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it('starts with exactly its two set-up commands', () => {
    const first = /^# wcf-agent\n\n```sh\n([\s\S]*?)```/.exec(readme)?.[1]?.trim().split('\n').map((l) => l.replace(/\s+#.*$/, ''));
    expect(first).toEqual(['npm ci && npm run demo', 'npm ci && npm test']);
  });

  it('has a "See it enforce" section with the enforcing demo', () => {
    const section = readme.slice(readme.indexOf('### See it enforce'));
    expect(readme).toContain('### See it enforce');
    expect(section).toMatch(/```sh\nsudo npm run demo -- --enforce/);
  });

  it('its quick start ends with the next command to run, a command the program has', () => {
    const start = readme.indexOf('## A first run');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1)).trim();
    const last = section.split('\n').at(-1)!;
    expect(last).toMatch(/^Next, .*`(sudo )?wcf-agent [^`]+`/);
    expect(programProblem(/`(?:sudo )?wcf-agent ([^`]+)`/.exec(last)![1]!.split(' '))).toBeUndefined();
  });

  it("its podman run has every option docs/deployment.md's has", () => {
    const options = (page: string) => {
      const text = readFileSync(join(ROOT, page), 'utf8');
      const block = shellBlocks(page).find((b) => b.text.includes('podman run'))!;
      expect(block, `${page} has a podman run`).toBeDefined();
      const run = logicalLines(block.text).find((l) => l.code.includes('podman run'))!.code;
      void text;
      return new Set(commands(run)[0]!.filter((w) => w.startsWith('-')));
    };
    const deployment = options('docs/deployment.md');
    const readmeRun = options('README.md');
    expect([...deployment].filter((o) => !readmeRun.has(o))).toEqual([]);
  });

  it('names the event source the watcher runs where it names one (xtables-monitor, else nft monitor)', () => {
    const monitor = readFileSync(join(ROOT, 'src/firewall/monitor.ts'), 'utf8');
    expect(monitor).toMatch(/'xtables-monitor', '-e'/);
    const watcher = /by the daemon's watcher\s*\(([^)]*)\)/.exec(readme)?.[1]?.replace(/\s+/g, ' ');
    expect(watcher).toMatch(/`xtables-monitor -e`/);
    expect(watcher).toMatch(/`nft monitor` where that is not installed/);
  });
});
