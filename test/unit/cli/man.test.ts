// The man pages are written from the program's own definitions: wcf-agent(8) from the commander
// program (every command, argument and option, with the words `--help` prints) and src/errors.ts,
// wcf-agent.json(5) from the config schema and its descriptions. These tests read the pages the
// generator writes and compare them with the code, walked independently of the generator.
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { commandsPage } from '../../../src/cli/man/commands-page.js';
import { configPage } from '../../../src/cli/man/config-page.js';
import { escapeText, inline, line, term } from '../../../src/cli/man/roff.js';
import { configSchema } from '../../../src/config/schema.js';
import { ERROR_CODES, EXIT_FILE_MALICIOUS, EXIT_INTERNAL } from '../../../src/errors.js';

const info = { date: '2026-01-02', version: '9.8.7' };
const page8 = commandsPage(buildProgram(), info);
const page5 = configPage(info);

/** roff text back to plain text: font changes dropped, escapes read. */
const plain = (roff: string) =>
  roff
    .replace(/\\f[BIRP]/g, '')
    .replace(/\\-/g, '-')
    .replace(/\\e/g, '\\')
    .replace(/\\&/g, '')
    .replace(/\\\(dq/g, '"')
    .replace(/\\\[u([0-9A-F]{4,5})\]/g, (_m, hex: string) => String.fromCodePoint(parseInt(hex, 16)));
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
/** A help text as the page shows it: `code` and **bold** are fonts there, not characters. */
const shown = (s: string) => oneLine(s.replace(/`|\*\*/g, '')).toLowerCase().replace(/\.$/, '');

/** The text of a `.SH` section, up to the next one. */
function section(page: string, title: string): string {
  const start = page.indexOf(`\n.SH "${title}"\n`);
  expect(start, `section ${title}`).toBeGreaterThan(-1);
  const end = page.indexOf('\n.SH ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/** COMMANDS, split at its `.SS` lines: command name -> its text. */
function commandSections(): Map<string, string> {
  const parts = section(page8, 'COMMANDS').split(/\n\.SS "([^"]*)"\n/);
  const out = new Map<string, string>();
  for (let i = 1; i < parts.length; i += 2) out.set(plain(parts[i]!), parts[i + 1]!);
  return out;
}

/** The program's commands, walked through commander's public `commands` (not the generator's walk). */
function programCommands(cmd: Command, prefix: string[] = []): { name: string; cmd: Command }[] {
  return cmd.commands.flatMap((c) => {
    const path = [...prefix, c.name()];
    return [{ name: path.join(' '), cmd: c }, ...programCommands(c, path)];
  });
}

describe('wcf-agent(8)', () => {
  const program = buildProgram();
  const commands = programCommands(program);
  const sections = commandSections();

  it("lists exactly the program's commands and subcommands, in the order --help does", () => {
    expect(commands.length).toBeGreaterThan(15);
    expect([...sections.keys()]).toEqual(commands.map((c) => c.name));
    expect(commands.map((c) => c.name)).toEqual(expect.arrayContaining(['run', 'sync', 'check-config', 'agents configure', 'overrides remove']));
  });

  it('gives each command its description, arguments and options with the words of --help', () => {
    for (const { name, cmd } of commands) {
      const text = oneLine(plain(sections.get(name)!));
      expect(text.toLowerCase(), name).toContain(shown(cmd.description()));
      for (const a of cmd.registeredArguments) {
        expect(text, `${name} <${a.name()}>`).toContain(a.name());
        expect(text.toLowerCase(), `${name} <${a.name()}>`).toContain(shown(a.description));
      }
      for (const o of cmd.options) {
        expect(text, `${name} ${o.flags}`).toContain(o.flags.replace(/[<>]/g, ''));
        expect(text.toLowerCase(), `${name} ${o.flags}`).toContain(shown(o.description));
      }
      // --help's own usage line is the section's first line.
      expect(text, name).toContain(cmd.createHelp().commandUsage(cmd).replace(/[<>]/g, ''));
    }
  });

  it("has every command `wcf-agent --help` lists, and the program's own options", () => {
    const help = program.helpInformation();
    for (const m of help.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)) {
      if (m[1] !== 'help') expect(sections.has(m[1]!), m[1]).toBe(true);
    }
    const options = plain(section(page8, 'OPTIONS'));
    for (const o of program.options) expect(options, o.flags).toContain(o.flags);
  });

  it('documents every exit status and every reported code of src/errors.ts', () => {
    const exits = plain(section(page8, 'EXIT STATUS'));
    const expected = new Set([0, EXIT_INTERNAL, EXIT_FILE_MALICIOUS, ...Object.values(ERROR_CODES).map((c) => c.exit)]);
    expect([...exits.matchAll(/^\.TP\n(\d+)$/gm)].map((m) => Number(m[1])).sort()).toEqual([...expected].sort());
    for (const c of Object.values(ERROR_CODES)) expect(exits, c.describe).toMatch(new RegExp(`Reported codes: [\\d, ]*\\b${c.report}\\b`));
    const reported = plain(section(page8, 'REPORTED CODES'));
    const codes = [...reported.matchAll(/^\.TP\n(\d+)$/gm)].map((m) => Number(m[1]));
    expect(codes.sort((a, b) => a - b)).toEqual([0, 1, ...Object.values(ERROR_CODES).map((c) => c.report)].sort((a, b) => a - b));
    for (const c of Object.values(ERROR_CODES)) expect(oneLine(reported).toLowerCase()).toContain(shown(c.describe));
  });

  it('carries the title line, the name line whatis reads, and the version', () => {
    expect(page8.split('\n')[0]).toBe('.TH "WCF-AGENT" "8" "2026-01-02" "wcf-agent 9.8.7" "System Administration"');
    expect(page8).toMatch(/^\.SH "NAME"\nwcf\\-agent \\- keeps the host firewall in step with a threat-intelligence feed$/m);
  });
});

describe('wcf-agent.json(5)', () => {
  const keys = Object.keys(configSchema.shape);

  it('describes every config key of the schema, once, and nothing else', () => {
    const tagged = [...page5.matchAll(/^\.TP\n\\fB([^\\]+(?:\\-[^\\]+)*)\\fR \(/gm)].map((m) => plain(m[1]!));
    expect(tagged.length).toBe(keys.length);
    expect([...tagged].sort()).toEqual([...keys].sort());
  });

  it('gives each key its type and default as the schema has them', () => {
    const text = oneLine(plain(page5));
    expect(text).toContain('maximum_rules (integer 1..2000000; default: 10000)');
    expect(text).toContain('plugin (one of auto, ipset, nftables, iptables, dry-run; default: auto)');
    expect(text).toContain('agid (string; required)');
    expect(text).toContain('hook_chains (array of strings; default: ["INPUT","FORWARD"])');
    expect(text).toContain('request_deadline_ms (integer 100..3600000; default: 2 × request_timeout_ms)');
  });
});

describe('roff text', () => {
  it('escapes what roff would read as requests or escapes', () => {
    expect(escapeText('a\\b')).toBe('a\\eb');
    expect(escapeText('4 × 2 → x')).toBe('4 \\[u00D7] 2 \\[u2192] x');
    expect(escapeText('--json', true)).toBe('\\-\\-json');
    expect(line('.TH fake')).toBe('\\&.TH fake');
    expect(line("'br")).toBe("\\&'br");
    expect(inline('see `--json` and [the daemon](daemon.md#state)')).toBe('see \\fB\\-\\-json\\fR and the daemon');
    expect(term('-c, --config <path>')).toBe('\\fB\\-c\\fR, \\fB\\-\\-config\\fR \\fIpath\\fR');
    expect(term('--running <on|off>')).toBe('\\fB\\-\\-running\\fR \\fIon|off\\fR');
  });
});
