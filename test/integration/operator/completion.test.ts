// `wcf-agent completion bash|zsh|fish`, loaded in each shell the way a user's shell loads it (from
// the file name and directory the .deb installs it under), then asked to complete partial command
// lines. The expected answers are read from the program's own definitions (buildProgram), so a
// command or option the scripts missed fails here. The shells come from Debian: bash-completion,
// zsh and fish (scripts/test.sh installs them); a missing one fails, naming the package.
import { execa } from 'execa';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { CLI, runCli } from '../../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'wcf-completion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// A file for the path completions to find.
writeFileSync(join(dir, 'config.json'), '{}');
// The command itself on PATH, as after an install: fish loads a command's completions only for a command it finds.
mkdirSync(join(dir, 'bin'));
writeFileSync(join(dir, 'bin', 'wcf-agent'), `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`, { mode: 0o755 });
const PATH = `${join(dir, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`;

const program = buildProgram();
const sub = (path: string[]): Command => path.reduce((c, name) => c.commands.find((s) => s.name() === name)!, program);
const commandNames = (path: string[]) => sub(path).commands.map((c) => c.name()).sort();
const longOptions = (path: string[]) => [...sub(path).options.map((o) => o.long!), '--help'].sort();

/** Where each shell finds a completion it loads on demand (the .deb's paths, under `dir`). */
const INSTALLED = {
  bash: join(dir, 'bash-completion', 'completions', 'wcf-agent'),
  zsh: join(dir, 'zsh', 'vendor-completions', '_wcf-agent'),
  fish: join(dir, 'fish', 'vendor_completions.d', 'wcf-agent.fish'),
} as const;
type Shell = keyof typeof INSTALLED;

async function need(tool: string, pkg: string): Promise<void> {
  const r = await execa('sh', ['-c', `command -v ${tool}`], { reject: false });
  if (r.exitCode !== 0) throw new Error(`${tool} is not installed: apt-get install ${pkg} (scripts/test.sh installs it)`);
}

/** bash: bash-completion's own loader finds the script by the command's name, as in an interactive shell. */
async function bashComplete(line: string): Promise<string[]> {
  const script = `
    source /usr/share/bash-completion/bash_completion || exit 3
    __load_completion wcf-agent || { echo 'bash-completion did not find the script' >&2; exit 4; }
    read -ra COMP_WORDS <<<"$1"
    [[ $1 == *' ' ]] && COMP_WORDS+=('')
    COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMP_LINE=$1; COMP_POINT=\${#1}
    fn=$(complete -p wcf-agent | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')
    "$fn" wcf-agent "\${COMP_WORDS[COMP_CWORD]}" "\${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = await execa('bash', ['--norc', '--noprofile', '-c', script, 'bash', line], { env: { BASH_COMPLETION_USER_DIR: join(dir, 'bash-completion'), PATH }, reject: false });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean).sort();
}

/**
 * zsh: an interactive zsh in a pseudo-terminal (zsh/zpty) with compinit and the script's directory
 * in $fpath; the line is typed and TAB pressed. compadd is wrapped to print each match it is given.
 */
const ZSH_DRIVER = `
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=($1 \\$fpath); autoload -Uz compinit; compinit -u -D; echo INIT-\\$((40+2))"
zpty -r z out '*INIT-42*'
zpty -w z 'PROMPT=""; zstyle ":completion:*" insert-tab false'
zpty -w z 'compadd() { if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd "$@"; return; fi; typeset -a h; builtin compadd -A h "$@"; local m; for m in $h; do print -r -- "HIT:$m"; done; builtin compadd "$@" }'
zpty -w z '__wcft_done() { print -r -- "DONE-$((1+1))"; }; comppostfuncs=(__wcft_done); bindkey "^I" complete-word; echo READY-$((3+4))'
zpty -r z out '*READY-7*'
zpty -w -n z "$2"$'\\t'
zpty -r z out '*DONE-2*'
for l in \${(f)out}; do l=\${l//$'\\r'/}; [[ $l == *HIT:* ]] && print -r -- "\${l##*HIT:}"; done
zpty -d z
`;
async function zshComplete(line: string): Promise<string[]> {
  const r = await execa('zsh', ['-f', '-c', ZSH_DRIVER, 'zsh', join(dir, 'zsh', 'vendor-completions'), line], { reject: false, timeout: 30_000, env: { PATH } });
  expect(r.exitCode, r.stderr).toBe(0);
  return [...new Set(r.stdout.split('\n').filter(Boolean))].sort();
}

/** fish: the vendor directory on $fish_complete_path, as /usr/share/fish/vendor_completions.d is; `complete -C` answers. */
async function fishComplete(line: string): Promise<string[]> {
  const r = await execa('fish', ['--no-config', '-c', `set -p fish_complete_path $argv[1]; complete -C $argv[2]`, join(dir, 'fish', 'vendor_completions.d'), line], { reject: false, env: { PATH } });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]!).sort();
}

const complete: Record<Shell, (line: string) => Promise<string[]>> = { bash: bashComplete, zsh: zshComplete, fish: fishComplete };

beforeAll(async () => {
  await need('bash', 'bash');
  await need('zsh', 'zsh');
  await need('fish', 'fish');
  const r = await execa('test', ['-f', '/usr/share/bash-completion/bash_completion'], { reject: false });
  if (r.exitCode !== 0) throw new Error('bash-completion is not installed: apt-get install bash-completion (scripts/test.sh installs it)');
  for (const [shell, path] of Object.entries(INSTALLED)) {
    const out = await runCli(['completion', shell]);
    expect(out.exitCode, out.stderr).toBe(0);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, out.stdout);
  }
}, 60_000);

describe.each(['bash', 'zsh', 'fish'] as const)('wcf-agent completion %s, loaded by that shell', (shell) => {
  it('completes every command of the program, and a prefix to its command', async () => {
    expect(await complete[shell]('wcf-agent ')).toEqual(expect.arrayContaining(commandNames([])));
    expect((await complete[shell]('wcf-agent ')).filter((w) => !w.startsWith('-'))).toEqual(commandNames([]));
    expect(await complete[shell]('wcf-agent ag')).toEqual(['agents']);
  });

  it('completes subcommands, and each command its own options', async () => {
    expect(await complete[shell]('wcf-agent agents ')).toEqual(commandNames(['agents']));
    expect(await complete[shell]('wcf-agent urls ')).toEqual(commandNames(['urls']));
    expect(await complete[shell]('wcf-agent sync --')).toEqual(longOptions(['sync']));
    expect(await complete[shell]('wcf-agent agents configure --')).toEqual(longOptions(['agents', 'configure']));
  });

  it("skips an option's value when finding the command (a value named like a command is not one)", async () => {
    // `remove` is the value of --config here, not the subcommand: `overrides`' subcommand is still to come.
    expect(await complete[shell]('wcf-agent overrides --config remove ')).toEqual(commandNames(['overrides']));
    const got = await complete[shell]('wcf-agent explain --config agents --');
    // explain's options (zsh leaves out the one already given), never those of `agents`.
    expect(got).toEqual(expect.arrayContaining(longOptions(['explain']).filter((o) => o !== '--config')));
    expect(got.filter((o) => !longOptions(['explain']).includes(o))).toEqual([]);
  });

  it('completes files after --config and for `file`, and the shells after `completion`', async () => {
    // zsh hands compadd the name without its directory, bash and fish the whole path.
    const names = (words: string[]) => words.map((w) => w.replace(`${dir}/`, ''));
    expect(names(await complete[shell](`wcf-agent hits --config ${dir}/con`))).toEqual(['config.json']);
    expect(names(await complete[shell](`wcf-agent file ${dir}/con`))).toEqual(['config.json']);
    expect(await complete[shell]('wcf-agent completion ')).toEqual(['bash', 'fish', 'zsh']);
  });
});

describe('wcf-agent completion', () => {
  it('refuses a shell it has no script for (exit 2, naming the choices)', async () => {
    const r = await runCli(['completion', 'tcsh']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/bash, zsh, fish/);
  });
});
