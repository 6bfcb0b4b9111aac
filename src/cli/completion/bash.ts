import { allCommands, type CommandSpec, type ValueKind } from './model.js';

/**
 * bash completion for wcf-agent, as data (the program's commands and options) and one function
 * that walks the words typed so far. Loaded by bash-completion on demand from
 * /usr/share/bash-completion/completions/wcf-agent, or by `source <(wcf-agent completion bash)`;
 * it works without bash-completion too (without its helpers for `--opt=value` words).
 */

/** A word for a bash single-quoted string. */
const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

const valueSpec = (v: ValueKind) => (v.kind === 'file' ? 'file' : v.kind === 'choices' ? `choices:${v.values.join(',')}` : 'any');

export function bashCompletion(root: CommandSpec): string {
  const cmds = allCommands(root);
  // Keyed by the command's words with the program's name first: bash refuses an empty key.
  const key = (c: CommandSpec) => (c.path ? `wcf-agent ${c.path}` : 'wcf-agent');
  const entry = (k: string, value: string) => `    [${quote(k)}]=${quote(value)}`;
  const subs = cmds.map((c) => entry(key(c), c.subcommands.map((s) => s.name).join(' ')));
  const opts = cmds.map((c) => entry(key(c), c.options.flatMap((o) => (o.short ? [o.short, o.long] : [o.long])).join(' ')));
  // "COMMAND OPTION" -> what its value is, for every option that takes one.
  const values = cmds.flatMap((c) => c.options.flatMap((o) => (o.value ? [o.short, o.long].filter((f) => f !== undefined).map((f) => entry(`${key(c)} ${f}`, valueSpec(o.value!))) : [])));
  const args = cmds.map((c) => entry(key(c), c.arguments.map(valueSpec).join(' ')));
  return `# bash completion for wcf-agent: written by \`wcf-agent completion bash\` from the program's own
# command definitions. Install it as /usr/share/bash-completion/completions/wcf-agent (the .deb and
# scripts/install.sh do), or: source <(wcf-agent completion bash)

_wcf_agent() {
  local -A subs=(
${subs.join('\n')}
  )
  local -A opts=(
${opts.join('\n')}
  )
  local -A values=(
${values.join('\n')}
  )
  local -A args=(
${args.join('\n')}
  )
  local cur=\${COMP_WORDS[COMP_CWORD]} path=wcf-agent skip=0 nargs=0 w i
  COMPREPLY=()
  # The command named so far, and how many of its arguments are given; an option's value is skipped.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=\${COMP_WORDS[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ $w == -* ]]; then
      [[ $w != *=* && -n \${values["$path $w"]+x} ]] && skip=1
      continue
    fi
    if [[ " \${subs[$path]} " == *" $w "* ]]; then
      path="$path $w"
      nargs=0
    else
      nargs=$((nargs + 1))
    fi
  done
  local want=''
  if ((skip)); then
    want=\${values["$path \${COMP_WORDS[COMP_CWORD - 1]}"]}
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "\${opts[$path]}" -- "$cur")
    return 0
  elif [[ -n \${subs[$path]} ]]; then
    mapfile -t COMPREPLY < <(compgen -W "\${subs[$path]}" -- "$cur")
    return 0
  else
    local -a kinds=(\${args[$path]})
    want=\${kinds[nargs]}
  fi
  case $want in
    file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    choices:*) want=\${want#choices:}; mapfile -t COMPREPLY < <(compgen -W "\${want//,/ }" -- "$cur") ;;
  esac
  return 0
}
complete -F _wcf_agent wcf-agent
`;
}
