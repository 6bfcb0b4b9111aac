import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { EXIT_STATUSES } from '../../../src/cli/exit-codes.js';
import { commandsPage } from '../../../src/cli/man/commands-page.js';
import { ERROR_CODES } from '../../../src/errors.js';
import { ROOT, runCli } from '../../helpers/cli.js';

describe('operator commands: help and usage', () => {
  it.each([['doctor'], ['check-config'], ['agents', 'list'], ['agents', 'configure'], ['agents', 'delete'], ['report'], ['explain']])('%s --help', async (...cmd) => {
    const r = await runCli([...cmd, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/--config/);
  });

  it('the top-level help lists them; --version before a command still prints the version', async () => {
    const r = await runCli(['--help']);
    for (const c of ['doctor', 'check-config', 'agents', 'report', 'explain']) expect(r.stdout).toMatch(new RegExp(`^\\s+${c}\\b`, 'm'));
    expect((await runCli(['--version'])).stdout).toMatch(/^wcf-agent \d+\.\d+\.\d+ /);
  });

  it('an unknown agents subcommand is bad usage (exit 2)', async () => {
    const r = await runCli(['agents', 'frobnicate']);
    expect(r.exitCode).toBe(2);
  });
});

/** The numbers of a footer line (`Exit codes: 0 ok, 1 ...`), in the order it lists them. */
function footerNumbers(help: string, label: string): number[] {
  const line = help.split('\n').find((l) => l.startsWith(`${label}: `));
  expect(line, `${label} line in --help`).toBeDefined();
  return [...line!.slice(label.length + 2).matchAll(/(?:^|[,;] )(\d+) /g)].map((m) => Number(m[1]));
}

describe('the help footer: exit codes and reported codes from the one table the man page uses', () => {
  it('lists every exit status, 1 included, in order, and every reported code in order', async () => {
    const help = (await runCli(['--help'])).stdout;
    const exits = footerNumbers(help, 'Exit codes');
    expect(exits).toEqual(EXIT_STATUSES.map((s) => s.exit));
    expect(exits).toContain(1);
    for (const c of Object.values(ERROR_CODES)) expect(exits).toContain(c.exit);
    const reported = footerNumbers(help, 'Reported codes');
    expect(reported).toEqual([0, 1, ...Object.values(ERROR_CODES).map((c) => c.report)].sort((a, b) => a - b));
  });

  it("says each exit status in the words of the man page's table", async () => {
    const help = (await runCli(['--help'])).stdout.replace(/\s+/g, ' ');
    for (const s of EXIT_STATUSES) expect(help).toContain(`${s.exit} ${s.short}`);
    const page = commandsPage(buildProgram(), { date: '2026-01-02', version: '0' });
    const statuses = [...page.slice(page.indexOf('.SH "EXIT STATUS"'), page.indexOf('.SH "REPORTED CODES"')).matchAll(/^\\fB(\d+)\\fR$/gm)].map((m) => Number(m[1]));
    expect(statuses).toEqual(EXIT_STATUSES.map((s) => s.exit));
  });
});

describe('wcf-agent version', () => {
  it('--json: the version, the build commit, Node, and the firewall and resolver tools found', async () => {
    const r = await runCli(['version', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const v = JSON.parse(r.stdout) as { version: string; commit: string; node: string; firewall_tools: Record<string, string | null>; resolver_tools: Record<string, string | null> };
    expect(v.version).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    // dist/ is built from this checkout: the commit is its HEAD.
    expect(v.commit).toBe((await execa('git', ['-C', ROOT, 'rev-parse', 'HEAD'])).stdout.trim());
    expect(v.node).toBe(process.version);
    expect(v.firewall_tools.nft).toBe((await execa('nft', ['--version'])).stdout.trim());
    expect(v.firewall_tools.iptables).toBe((await execa('iptables', ['--version'])).stdout.trim());
    expect(v.resolver_tools['unbound-control']).toBe(/Version (\S+)/.exec((await execa('unbound-control', ['-h'], { reject: false })).stdout)?.[1]);
    expect(Object.keys(v.resolver_tools)).toContain('rndc');
  });

  it('--version is the first line of `version`, and names the same version and commit', async () => {
    const [short, long, json] = await Promise.all([runCli(['--version']), runCli(['version']), runCli(['version', '--json'])]);
    const first = long.stdout.split('\n')[0]!;
    expect(short.stdout.trim()).toBe(first);
    const v = JSON.parse(json.stdout) as { version: string; commit: string; node: string };
    expect(first).toBe(`wcf-agent ${v.version} (commit ${v.commit.slice(0, 12)}, Node ${v.node})`);
    expect(long.stdout).toMatch(/^firewall tools: nft nftables v/m);
    expect(long.stdout).toMatch(/^resolver tools: unbound-control \d/m);
  });
});
