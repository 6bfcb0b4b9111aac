import { allCommands, shortDescription, type CommandSpec, type OptionSpec, type ValueKind } from './model.js';

/**
 * zsh completion for wcf-agent: one function per command, each an `_arguments` spec written from
 * the program's own definitions. Autoloaded from a directory in $fpath as `_wcf-agent` (the .deb
 * installs it in /usr/share/zsh/vendor-completions), or loaded with
 * `source <(wcf-agent completion zsh)` after compinit.
 */

/** Text for a zsh single-quoted string. */
const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
/** A description inside an _arguments spec: brackets and colons have a meaning there. */
const describe = (s: string) => shortDescription(s).replace(/([[\]:\\])/g, '\\$1');
const fnName = (c: CommandSpec) => `_wcf-agent${c.path ? `-${c.path.replaceAll(' ', '-')}` : ''}`;

function action(v: ValueKind, label: string): string {
  if (v.kind === 'file') return `:${label}:_files`;
  if (v.kind === 'choices') return `:${label}:(${v.values.join(' ')})`;
  return `:${label}: `;
}

function optionSpecs(o: OptionSpec): string {
  const value = o.value ? action(o.value, o.long.replace(/^--/, '')) : '';
  // -h/--help and -V/--version end the command line: nothing else completes after them.
  const exclusive = !o.value && (o.long === '--help' || o.long === '--version') ? '(- *)' : o.short ? `(${o.short} ${o.long})` : '';
  const names = o.short ? `{${o.short},${o.long}}` : o.long;
  const spec = `[${describe(o.description)}]${value}`;
  return o.short ? `${quote(exclusive)}${names}${quote(spec)}` : quote(`${exclusive}${names}${spec}`);
}

function commandFunction(c: CommandSpec): string {
  const specs = c.options.map(optionSpecs);
  if (c.subcommands.length) {
    const list = c.subcommands.map((s) => quote(`${s.name}:${shortDescription(s.description)}`));
    const cases = c.subcommands.map((s) => `      ${s.name}) ${fnName(s)} ;;`);
    return `${fnName(c)}() {
  local curcontext=$curcontext state line
  typeset -A opt_args
  _arguments -C \\
${[...specs, "'1: :->command'", "'*:: :->arguments'"].map((s) => `    ${s}`).join(' \\\n')} && return
  case $state in
    command)
      local -a commands=(
${list.map((l) => `        ${l}`).join('\n')}
      )
      _describe -t commands 'wcf-agent command' commands ;;
    arguments)
      case $line[1] in
${cases.join('\n')}
      esac ;;
  esac
}`;
  }
  const positional = c.arguments.map((a, i) => quote(`${i + 1}${action(a, 'argument')}`));
  const all = [...specs, ...positional];
  return `${fnName(c)}() {
  _arguments \\
${all.map((s) => `    ${s}`).join(' \\\n')}
}`;
}

export function zshCompletion(root: CommandSpec): string {
  return `#compdef wcf-agent
# zsh completion for wcf-agent: written by \`wcf-agent completion zsh\` from the program's own
# command definitions. Installed as /usr/share/zsh/vendor-completions/_wcf-agent (the .deb and
# scripts/install.sh), or after compinit: source <(wcf-agent completion zsh)

${allCommands(root).map(commandFunction).join('\n\n')}

if [ "$funcstack[1]" = "_wcf-agent" ]; then
  _wcf-agent "$@"
else
  compdef _wcf-agent wcf-agent
fi
`;
}
