import { allCommands, shortDescription, type CommandSpec, type OptionSpec } from './model.js';

/**
 * fish completion for wcf-agent: a helper that finds the command typed so far (skipping option
 * values, as the program parses them), then one `complete` line per command, option and argument,
 * written from the program's own definitions. Installed as
 * /usr/share/fish/vendor_completions.d/wcf-agent.fish, or: wcf-agent completion fish | source
 */

/** Text for a fish single-quoted string. */
const quote = (s: string) => `'${s.replace(/(['\\])/g, '\\$1')}'`;

function optionLine(c: CommandSpec, o: OptionSpec): string {
  const names = [o.short ? `-s ${o.short.slice(1)}` : '', `-l ${o.long.slice(2)}`].filter(Boolean).join(' ');
  const value = !o.value ? '' : o.value.kind === 'file' ? ' -r -F' : o.value.kind === 'choices' ? ` -x -a ${quote(o.value.values.join(' '))}` : ' -x';
  return `complete -c wcf-agent -n ${quote(`__wcf_agent_at ${quote(c.path)}`)} ${names}${value} -d ${quote(shortDescription(o.description))}`;
}

function commandLines(c: CommandSpec): string[] {
  const at = `-n ${quote(`__wcf_agent_at ${quote(c.path)}`)}`;
  const lines = c.options.map((o) => optionLine(c, o));
  for (const s of c.subcommands) lines.push(`complete -c wcf-agent ${at} -a ${s.name} -d ${quote(shortDescription(s.description))}`);
  // Positional arguments: files or a list where the program says so (fish cannot tell the nth apart cheaply: any of them).
  for (const a of c.arguments) {
    if (a.kind === 'file') lines.push(`complete -c wcf-agent ${at} -F`);
    else if (a.kind === 'choices') lines.push(`complete -c wcf-agent ${at} -a ${quote(a.values.join(' '))}`);
  }
  return lines;
}

export function fishCompletion(root: CommandSpec): string {
  const cmds = allCommands(root);
  const paths = cmds.filter((c) => c.path).map((c) => quote(c.path));
  const valued = cmds.flatMap((c) => c.options.filter((o) => o.value).flatMap((o) => [o.short, o.long].filter((f) => f !== undefined).map((f) => quote(`${c.path} ${f}`.trim()))));
  return `# fish completion for wcf-agent: written by \`wcf-agent completion fish\` from the program's own
# command definitions. Installed as /usr/share/fish/vendor_completions.d/wcf-agent.fish (the .deb
# and scripts/install.sh), or: wcf-agent completion fish | source

set -g __wcf_agent_commands ${paths.join(' ')}
set -g __wcf_agent_valued ${valued.join(' ')}

# The command named so far on the line ('' for none yet); the value after an option that takes one is skipped.
function __wcf_agent_path
    set -l words (commandline -opc)
    set -e words[1]
    set -l path ''
    set -l skip 0
    for w in $words
        if test $skip -eq 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $w
            if not string match -q -- '*=*' $w; and contains -- (string trim -- "$path $w") $__wcf_agent_valued
                set skip 1
            end
            continue
        end
        set -l next (string trim -- "$path $w")
        if contains -- $next $__wcf_agent_commands
            set path $next
        end
    end
    echo $path
end

function __wcf_agent_at
    test (__wcf_agent_path) = "$argv[1]"
end

complete -c wcf-agent -f
${cmds.flatMap(commandLines).join('\n')}
`;
}
