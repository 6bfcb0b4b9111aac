import type { Command, Option } from 'commander';

/**
 * The program's commands as the completion scripts need them, read from the commander program
 * itself (as the man page is), so a new command or option completes without anyone touching
 * the scripts. Only what a shell can use: names, descriptions, which options take a value, and
 * which values are files or a fixed list.
 */

/** What may follow an option or fill an argument: a file name, one of a list, or anything (no completion). */
export type ValueKind = { kind: 'file' } | { kind: 'choices'; values: readonly string[] } | { kind: 'any' };

export interface OptionSpec {
  /** `-c`, when the option has a short form. */
  readonly short: string | undefined;
  /** `--config`. */
  readonly long: string;
  readonly description: string;
  /** undefined: a flag, it takes no value. */
  readonly value: ValueKind | undefined;
}

export interface CommandSpec {
  /** The words after `wcf-agent`: '' for the program itself, `agents list` for a subcommand. */
  readonly path: string;
  readonly name: string;
  readonly description: string;
  readonly options: readonly OptionSpec[];
  /** The positional arguments, in order. */
  readonly arguments: readonly ValueKind[];
  readonly subcommands: readonly CommandSpec[];
}

/** A value named like a path (`<path>`, `<digest|path>`) completes as a file name. */
function valueKind(name: string, choices: readonly string[] | undefined): ValueKind {
  if (choices?.length) return { kind: 'choices', values: choices };
  return /(^|\|)path$/.test(name) ? { kind: 'file' } : { kind: 'any' };
}

function optionSpec(o: Option): OptionSpec {
  const valueName = /<([^>]+)>|\[([^\]]+)\]/.exec(o.flags);
  return {
    short: o.short,
    long: o.long ?? o.short ?? o.flags,
    description: o.description,
    value: o.required || o.optional ? valueKind(valueName?.[1] ?? valueName?.[2] ?? '', o.argChoices) : undefined,
  };
}

/** The program and every command below it, with the options `--help` shows (help included). */
export function completionModel(program: Command): CommandSpec {
  const help = program.createHelp();
  const walk = (cmd: Command, path: string[]): CommandSpec => ({
    path: path.join(' '),
    name: cmd.name(),
    description: help.commandDescription(cmd),
    options: help.visibleOptions(cmd).map(optionSpec),
    arguments: help.visibleArguments(cmd).map((a) => valueKind(a.name(), a.argChoices)),
    // visibleCommands adds commander's implicit `help` command, which is not one of the program's own.
    subcommands: help
      .visibleCommands(cmd)
      .filter((c) => cmd.commands.includes(c))
      .map((c) => walk(c, [...path, c.name()])),
  });
  return walk(program, []);
}

/** Every command of the model, the program first, depth first. */
export function allCommands(root: CommandSpec): CommandSpec[] {
  return [root, ...root.subcommands.flatMap(allCommands)];
}

/** The first line of a description, without Markdown backticks, short enough for a completion menu. */
export function shortDescription(text: string, max = 80): string {
  const plain = text.replaceAll('`', '').split('\n')[0]!.trim();
  return plain.length <= max ? plain : `${plain.slice(0, max - 3).trimEnd()}...`;
}
