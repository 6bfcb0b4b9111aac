import type { Command } from 'commander';
import { EXIT_STATUSES, reportedCodes, reportsByExit } from '../exit-codes.js';
import { escapeText, inline, line, macro, sentence, term } from './roff.js';

/**
 * wcf-agent(8), written from the commander program itself: every command, its arguments and
 * options with the descriptions `--help` prints (through commander's own Help, so the terms are
 * the same), and the exit and reported codes from src/errors.ts. Only the framing prose
 * (DESCRIPTION, ENVIRONMENT, FILES) is written here.
 */

export interface CommandEntry {
  /** The words after `wcf-agent`: `sync`, `agents list`. */
  readonly name: string;
  /** As `--help` prints it: `wcf-agent agents list [options]`. */
  readonly usage: string;
  readonly description: string;
  readonly arguments: readonly { term: string; description: string }[];
  readonly options: readonly { term: string; description: string }[];
}

/** Every command and subcommand of the program, depth first, in the order `--help` lists them. */
export function commandEntries(program: Command): CommandEntry[] {
  const help = program.createHelp();
  const out: CommandEntry[] = [];
  const walk = (cmd: Command, prefix: string[]) => {
    // visibleCommands adds commander's implicit `help` command, which is not one of the program's own.
    for (const sub of help.visibleCommands(cmd).filter((c) => cmd.commands.includes(c))) {
      const path = [...prefix, sub.name()];
      out.push({
        name: path.join(' '),
        usage: help.commandUsage(sub),
        description: help.commandDescription(sub),
        arguments: help.visibleArguments(sub).map((a) => ({ term: help.argumentTerm(a), description: help.argumentDescription(a) })),
        // -h, --help is on every command; the page says so once.
        options: help
          .visibleOptions(sub)
          .filter((o) => o.long !== '--help')
          .map((o) => ({ term: help.optionTerm(o), description: help.optionDescription(o) })),
      });
      walk(sub, path);
    }
  };
  walk(program, []);
  return out;
}


/** Each exit status with the reported codes it carries (src/cli/exit-codes.ts, from src/errors.ts). */
function exitStatus(): string[] {
  const reports = reportsByExit();
  return EXIT_STATUSES.map(({ exit, long }) => {
    const codes = reports.get(exit);
    return macro.tp(`\\fB${exit}\\fR`, inline(sentence(long) + (codes ? ` Reported codes: ${codes.join(', ')}.` : '')));
  });
}

function reportedCodeList(): string[] {
  return reportedCodes().map(({ code, describe }) => macro.tp(`\\fB${code}\\fR`, inline(sentence(describe))));
}

export interface PageInfo {
  readonly date: string;
  readonly version: string;
}

export function commandsPage(program: Command, info: PageInfo): string {
  const help = program.createHelp();
  const summary = program.description().replace(/\.$/, '');
  const out: string[] = [
    macro.th('WCF-AGENT', '8', info.date, `wcf-agent ${info.version}`, 'System Administration'),
    macro.sh('NAME'),
    line(`wcf\\-agent \\- ${escapeText(summary.charAt(0).toLowerCase() + summary.slice(1))}`),
    macro.sh('SYNOPSIS'),
    line(term('wcf-agent <command> [options] [arguments]')),
    '.br',
    line(term('wcf-agent <command> --help')),
    '.br',
    line(term('wcf-agent --version | --help')),
    macro.sh('DESCRIPTION'),
    line(
      inline(
        "**wcf-agent** is an endpoint agent daemon for Linux hosts. It keeps the host firewall in step with a threat-intelligence service: it pulls its stored configuration (`maximum_rules`, `score_threshold`, `sync_time`, `running`) and the IPv4 indicator feed from the API, computes each indicator's decayed score, applies the best entries to a firewall backend (nftables, ipset with iptables, plain iptables, or a dry run) up to `maximum_rules`, and reports its state back. With `url_feed` it also blocks the URL feed's host names at the host's resolver (unbound, an RPZ zone or dnsmasq).",
      ),
    ),
    macro.pp(
      inline(
        "It never blocks the protected set (loopback, the host's own addresses, the API server, the proxy, the resolvers, the default gateways, logged-in SSH sessions, the `allowlist`, link-local, multicast and reserved ranges), nor a network wider than `min_prefix`. It changes only the firewall objects (set, chain or table) and resolver files it created and marked as its own, and refuses an object of the configured name that someone else made. A failed pull or apply leaves the previous enforcement in place.",
      ),
    ),
    macro.pp(
      inline(
        'Under systemd, `wcf-agent.service` runs `wcf-agent run`, the daemon. The other commands inspect and operate the host beside it. Options go after the command name; `--version` and `--help` may also go before it. `wcf-agent --help` and `wcf-agent COMMAND --help` print the descriptions below. The configuration file is described in **wcf-agent.json**(5).',
      ),
    ),
    macro.sh('COMMANDS'),
  ];
  for (const c of commandEntries(program)) {
    out.push(macro.ss(escapeText(c.name, true)), line(term(c.usage)), macro.pp(inline(sentence(c.description))));
    for (const a of c.arguments) out.push(macro.tp(term(a.term), inline(sentence(a.description))));
    for (const o of c.options) out.push(macro.tp(term(o.term), inline(sentence(o.description))));
  }
  out.push(macro.sh('OPTIONS'), macro.pp(inline('Every command also takes `-h`, `--help`. Before any command:')));
  for (const o of help.visibleOptions(program)) out.push(macro.tp(term(help.optionTerm(o)), inline(sentence(help.optionDescription(o)))));
  out.push(macro.sh('EXIT STATUS'), ...exitStatus());
  out.push(
    macro.sh('REPORTED CODES'),
    macro.pp(inline('The `code` each cycle reports to the API (`POST /feedback`) and `status` shows:')),
    ...reportedCodeList(),
  );
  out.push(
    macro.sh('ENVIRONMENT'),
    macro.tp('\\fBWCF_AGENT_CONFIG\\fR', inline('The configuration file when `--config` is not given (default `/etc/wcf-agent/config.json`).')),
    macro.tp('\\fBWCF_LOG_LEVEL\\fR', inline("Overrides the configuration's `log_level`.")),
    macro.tp(
      '\\fBHTTPS_PROXY\\fR, \\fBHTTP_PROXY\\fR, \\fBNO_PROXY\\fR',
      inline('The proxy for the API when the configuration has no `proxy`; the proxy host is protected too.'),
    ),
    macro.tp('\\fBJOURNAL_STREAM\\fR', inline('Set by systemd: with `log_format` `auto`, logs are then journal lines with a priority prefix.')),
    macro.sh('FILES'),
    macro.tp('\\fI/etc/wcf\\-agent/config.json\\fR', inline('The configuration (mode 0600: it holds the API token); see **wcf-agent.json**(5).')),
    macro.tp(
      '\\fI/var/lib/wcf\\-agent/\\fR',
      inline(
        'The default `state_dir`: `state.json`, the feed caches, `applied-<plugin>.json` (the last applied set, restored at start-up), `history-*.bin` (the change history `history` and `explain --at` read, within `history_max_mb`), `hit-totals.json`, `overrides.json`, `daemon.pid`, `agent.lock` and the daemon\'s `control.sock`.',
      ),
    ),
    macro.tp('\\fI/lib/systemd/system/wcf\\-agent.service\\fR', inline('The systemd unit: `run`, with `check-config` before it; `systemctl reload` sends SIGHUP.')),
    macro.tp('\\fI/usr/share/doc/wcf\\-agent/README.md\\fR', inline('Installation, a first run, and where the rest of the documentation is.')),
    macro.sh('SEE ALSO'),
    line(
      ['wcf-agent.json(5)', 'nft(8)', 'ipset(8)', 'iptables(8)', 'unbound-control(8)', 'dnsmasq(8)', 'systemctl(1)', 'journalctl(1)']
        .map((ref) => ref.replace(/^(.+)\((\d)\)$/, (_m, name: string, sec: string) => `\\fB${escapeText(name, true)}\\fR(${sec})`))
        .join(', '),
    ),
  );
  return out.join('\n') + '\n';
}
