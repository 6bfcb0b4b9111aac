// docs/commands.md is written by hand (the man page is the generated reference): it must still name
// every command the program has, and its code tables must hold exactly the codes of src/errors.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { ERROR_CODES, EXIT_FILE_MALICIOUS, EXIT_INTERNAL } from '../../../src/errors.js';

const page = readFileSync(join(import.meta.dirname, '../../../docs/commands.md'), 'utf8');

function names(cmd: Command, prefix: string[] = []): string[] {
  return cmd.commands.flatMap((c) => [[...prefix, c.name()].join(' '), ...names(c, [...prefix, c.name()])]);
}

/** The first column of the table that follows `heading`, as numbers. */
function tableNumbers(heading: string): number[] {
  const at = page.indexOf(heading);
  expect(at, heading).toBeGreaterThan(-1);
  const rows: number[] = [];
  for (const line of page.slice(at).split('\n').slice(1)) {
    const m = /^\| (\d+) \|/.exec(line);
    if (m) rows.push(Number(m[1]));
    else if (rows.length && !line.startsWith('|')) break;
  }
  return rows;
}

describe('docs/commands.md', () => {
  it("names every command of the program in its synopsis (as `wcf-agent <command>`)", () => {
    const synopsis = page.slice(page.indexOf('## Synopsis'), page.indexOf('\n## ', page.indexOf('## Synopsis') + 1));
    const all = names(buildProgram());
    expect(all.length).toBeGreaterThan(15);
    // Group commands (agents, urls) are named through their subcommands.
    const missing = all.filter((n) => !new RegExp(`wcf-agent ${n.replace(' ', ' +')}\\b`).test(synopsis) && !all.some((o) => o.startsWith(`${n} `)));
    expect(missing).toEqual([]);
  });

  it('lists exactly the exit statuses and reported codes of src/errors.ts', () => {
    const exits = new Set([0, EXIT_INTERNAL, EXIT_FILE_MALICIOUS, ...Object.values(ERROR_CODES).map((c) => c.exit)]);
    expect(tableNumbers('| exit | meaning |')).toEqual([...exits].sort((a, b) => a - b));
    const reports = [0, 1, ...Object.values(ERROR_CODES).map((c) => c.report)].sort((a, b) => a - b);
    expect(tableNumbers('| code | meaning |')).toEqual(reports);
  });
});
