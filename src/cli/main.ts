import { Argument, Command, CommanderError, Option } from 'commander';
import { UsageError, WcfError, exitCodeOf, errorMessage } from '../errors.js';
import { versionLine } from '../version.js';
import { exitCodesFooter } from './exit-codes.js';
import { jsonPrinted } from './format.js';

// Commands are loaded when they run: `--version`, `--help` and `check-config`
// (systemd's ExecStartPre) then do not pay for the HTTP, firewall and state modules.
const commands = {
  run: () => import('./commands/run.js'),
  sync: () => import('./commands/sync.js'),
  plan: () => import('./commands/plan.js'),
  status: () => import('./commands/status.js'),
  hits: () => import('./commands/hits.js'),
  flush: () => import('./commands/flush.js'),
  doctor: () => import('./commands/doctor.js'),
  checkConfig: () => import('./commands/check-config.js'),
  agents: () => import('./commands/agents.js'),
  report: () => import('./commands/report.js'),
  urls: () => import('./commands/urls.js'),
  file: () => import('./commands/file.js'),
  explainName: () => import('./commands/explain-name.js'),
  explain: () => import('./commands/explain.js'),
  explainAt: () => import('./commands/explain-at.js'),
  history: () => import('./commands/history.js'),
  overrides: () => import('./commands/overrides.js'),
  version: () => import('./commands/version.js'),
  completion: () => import('./completion/index.js'),
};

const configOption = () => new Option('-c, --config <path>', 'config file (default: $WCF_AGENT_CONFIG, then /etc/wcf-agent/config.json)');
const jsonOption = (what = 'print the outcome as one JSON object on stdout') => new Option('--json', what);

export function buildProgram(): Command {
  const program = new Command('wcf-agent')
    .description('Keeps the host firewall in step with a threat-intelligence feed.')
    .version(versionLine(), '-V, --version', 'print the version line (`wcf-agent version` adds the tools found)')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    // Program options only before the command name, so `agents configure --version V` is that command's option.
    .enablePositionalOptions();

  program
    .command('run')
    .description('long-running daemon: apply the last known good set, then sync every sync_time minutes')
    .addOption(configOption())
    .option('--dry-run', 'use the dry-run backend (render rules to a file, touch no firewall)')
    .action(async (o) => {
      setExit(await (await commands.run()).runCommand(o));
      // Nothing may keep a stopped daemon alive (a timer, a socket): exit now. Logs are written synchronously.
      process.exit(exitCode);
    });

  program
    .command('sync')
    .description('run one cycle (pull, select, apply, report), then exit; the daemon is `run`')
    .option('--once', 'one cycle, then exit (what sync always does; accepted for scripts that say it)')
    .addOption(configOption())
    .option('--dry-run', 'use the dry-run backend (render rules to a file, touch no firewall)')
    .option('--force', 'apply even if the shrink guard would hold the pull back')
    .option('--json', 'print the outcome as one JSON object on stdout: code, counts by reason, changes, durations (the entries are plan --json)')
    .action(async (o) => setExit(await (await commands.sync()).syncCommand(o)));

  program
    .command('plan')
    .description('show what would be applied now; touches neither the firewall nor the state')
    .addOption(configOption())
    .option('--json', 'print every selected entry as JSON on stdout')
    .option('--limit <n>', 'rows to show in the table (default 50)')
    .option('--offline', 'plan from what the last sync cached in state_dir, without asking the API (when it is down)')
    .action(async (o) => setExit(await (await commands.plan()).planCommand(o)));

  program
    .command('explain')
    .description(
      'is this address, network, host name or URL blocked, and why (not)? From the last pull (no network): the rule that decided, the records, what the kernel or the resolver holds',
    )
    .argument('<target>', 'an IPv4 address or network, a host name, or a URL')
    .addOption(configOption())
    .option('--json', 'print one JSON object on stdout (for an address: address, blocked, verdict, rule, records, manual, in_kernel, kernel, hits)')
    .option('--refresh', 'addresses: pull from the API first (applies nothing, writes nothing)')
    .option('--at <time>', 'the verdict at that moment (epoch seconds or ISO 8601), from the change history in state_dir')
    // Digits, dots and a slash only: an address (a malformed one is a usage error naming it); anything else is a name.
    .action(async (target: string, o) =>
      setExit(
        o.at !== undefined
          ? await (await commands.explainAt()).explainAtCommand(target, o)
          : /^[\d./]+$/.test(target.trim())
            ? await (await commands.explain()).explainCommand(target, o)
            : await (await commands.explainName()).explainNameCommand(target, o),
      ),
    );

  program
    .command('history')
    .description('when was this address, network or host name blocked or unblocked here, and why: its changes from the change history in state_dir, oldest first; touches nothing')
    .argument('<target>', 'an IPv4 address (also the networks that covered it) or network (also the addresses inside it), or a host name (also the names above and below it)')
    .addOption(configOption())
    .option('--since <time>', 'only changes from then on (epoch seconds or ISO 8601)')
    .option('--until <time>', 'only changes up to then (epoch seconds or ISO 8601)')
    .option('--json', 'print {"target", "events": [{ts, entry, change, reason, score, rank, cause}], "notes", "history"} on stdout')
    .action(async (target: string, o) => setExit(await (await commands.history()).historyCommand(target, o)));

  program
    .command('status')
    .description('last sync, counts, next sync, code, and the configuration in force')
    .addOption(configOption())
    .option('--json', 'print as JSON on stdout')
    .option('--probe', 'one line, and exit 0 only while a daemon runs and the firewall enforces its set (4 otherwise): an exec probe')
    .action(async (o) => setExit(await (await commands.status()).statusCommand(o)));

  program
    .command('hits')
    .description('blocked indicators that matched traffic, per direction, most packets first; touches nothing')
    .addOption(configOption())
    .option('--json', 'print {"hits": [...]} as JSON on stdout')
    .option('--top <n>', 'show the N indicators with the most packets')
    .option('--direction <side>', 'only `in` (packets from listed addresses) or `out` (packets to them)')
    .action(async (o) => setExit(await (await commands.hits()).hitsCommand(o)));

  program
    .command('flush')
    .description('remove every firewall object the agent created (and nothing else)')
    .addOption(configOption())
    .option('--dry-run', 'flush the dry-run backend files instead')
    .addOption(jsonOption('print {ok, plugin, removed, foreign, dns} on stdout'))
    .action(async (o) => setExit(await (await commands.flush()).flushCommand(o)));

  program
    .command('doctor')
    .description('check that this host can run the agent: config, API, token, clock, firewall tools, capability, state dir (read-only)')
    .addOption(configOption())
    .option('--json', 'print {checks: [{name, status, message, hint}], ok} on stdout')
    .action(async (o) => setExit(await (await commands.doctor()).doctorCommand(o)));

  program
    .command('check-config')
    .description('validate config.json (and token_file, names, metrics_listen); no network, no firewall, no state writes (systemd ExecStartPre)')
    .addOption(configOption())
    .addOption(jsonOption('print {ok, path, problems, warnings, notes} on stdout'))
    .action(async (o) => setExit(await (await commands.checkConfig()).checkConfigCommand(o)));

  const agents = program.command('agents').description('admin: list, configure and delete agent records (uses base_url and token from config.json)');
  agents
    .command('list')
    .description('every agent record on the server: host, plugin, code, entries, last sync, stored configuration')
    .addOption(configOption())
    .option('--json', 'print {agents: [...]} as the API returns them')
    .action(async (o) => setExit(await (await commands.agents()).agentsListCommand(o)));
  agents
    .command('configure')
    .description("store an agent's configuration on the server; the agent applies it at its next sync")
    .addOption(configOption())
    .requiredOption('--agid <id>', 'the agent ID')
    .option('--maximum-rules <n>', 'maximum entries in the firewall (1..2000000)')
    .option('--score-threshold <n>', 'minimum decayed score to block (1..1000000)')
    .option('--sync-time <minutes>', 'minutes between syncs (1..10080)')
    .option('--running <on|off>', 'on: enforce; off: remove the rules, keep syncing (also true/false, yes/no, enabled/disabled)')
    .option('--version <v>', 'desired agent version (logged by the agent when it differs)')
    .addOption(jsonOption('print {agid, stored} on stdout: the configuration the server now holds'))
    .action(async (o) => setExit(await (await commands.agents()).agentsConfigureCommand(o)));
  agents
    .command('delete')
    .description('delete an agent record on the server; does not stop the agent: set --running off first')
    .addOption(configOption())
    .requiredOption('--agid <id>', 'the agent ID')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
    .addOption(jsonOption('print {agid, deleted, was_running} on stdout'))
    .action(async (o) => setExit(await (await commands.agents()).agentsDeleteCommand(o)));

  program
    .command('report')
    .description('report an IPv4 indicator to the threat-intelligence service, or set its decision (block or allow for every agent)')
    .argument('<ip>', 'IPv4 address or network (host bits zero)')
    .addOption(configOption())
    .requiredOption('--confidence <c>', 'confidence that it is malicious, 0..1')
    .option('--decision <d>', 'block, allow or none (1, 0, -1); default none (score-based)')
    .option('--ttl <t>', 'how long the decision holds: seconds from now (3600, 90m, 12h, 7d) or an epoch timestamp')
    .option('--notes <text>', 'free notes')
    .option('--source <text>', 'where the actor was seen')
    .addOption(jsonOption('print {reported: the body sent} on stdout'))
    .action(async (ip: string, o) => setExit(await (await commands.report()).reportCommand(ip, o)));

  const urls = program.command('urls').description('admin: list the URL feed and set URL decisions (block, allow, none for every agent); uses base_url and token from config.json');
  urls
    .command('list')
    .description('URL records from --since (a table on a terminal)')
    .addOption(configOption())
    .option('--since <ts>', 'epoch seconds, or a time ago such as 90m, 12h, 7d (default: the start of the feed)')
    .option('--limit <n>', 'records to show, 1..1999 (default 100)')
    .option('--json', 'print {since, next_ts, count, urls} on stdout')
    .action(async (o) => setExit(await (await commands.urls()).urlsListCommand(o)));
  urls
    .command('decide')
    .description("override a URL's decision: block (blacklist), allow (whitelist) or none (score-based)")
    .argument('<url>', 'an http or https URL (sent percent-encoded)')
    .argument('<decision>', 'block, allow or none')
    .addOption(configOption())
    .addOption(jsonOption('print {url, decision} on stdout'))
    .action(async (url: string, decision: string, o) => setExit(await (await commands.urls()).urlsDecideCommand(url, decision, o)));

  program
    .command('file')
    .description('is this file known to the threat-intelligence platform? A PATH is hashed locally with SHA-256; exit 5 when known malicious')
    .argument('<digest|path>', 'an MD5, SHA1 or SHA256 hex digest, or a file to hash')
    .addOption(configOption())
    .option('--deep', 'ask for the deep scan (about 4 million indicators) when the digest is not in the main store')
    .option('--json', 'print {digest, path, deep, verdict, record} on stdout')
    .action(async (arg: string, o) => setExit(await (await commands.file()).fileCommand(arg, o)));
  const overrideOptions = (c: Command) =>
    c
      .argument('<address>', 'IPv4 address or network')
      .addOption(configOption())
      .option('--for <duration>', 'how long it holds: 90s, 30m, 2h, 7d (default: until removed)')
      .option('--note <text>', 'why, for the overrides list')
      .addOption(jsonOption('print {address, action, created, expires, note, applied} on stdout'));
  overrideOptions(
    program.command('allow').description('never block this address on this host (beats every feed and decision), at once; until removed or --for ends'),
  ).action(async (address: string, o) => setExit(await (await commands.overrides()).allowCommand(address, o)));
  overrideOptions(
    program.command('block').description('block this address on this host at once (never a protected address); until removed or --for ends'),
  ).action(async (address: string, o) => setExit(await (await commands.overrides()).blockCommand(address, o)));
  const overrides = program
    .command('overrides')
    .description('list the local allows and blocks (wcf-agent allow / block)')
    .addOption(configOption())
    .option('--json', 'print {overrides: [...]} on stdout')
    .action(async (o) => setExit(await (await commands.overrides()).overridesListCommand(o)));
  overrides
    .command('remove')
    .description('remove the local allow or block of an address, at once')
    .argument('<address>', 'the address or network as listed')
    .addOption(configOption())
    .addOption(jsonOption('print {address, removed, applied} on stdout'))
    .action(async (address: string, o) => setExit(await (await commands.overrides()).overridesRemoveCommand(address, o)));

  program
    .command('version')
    .description('the agent version, the Node.js inside it, the commit it was built from, and the firewall and resolver tools found')
    .addOption(jsonOption('print {version, commit, node, firewall_tools, resolver_tools, sbom} on stdout'))
    .action(async (o) => setExit(await (await commands.version()).versionCommand(o)));

  program
    .command('completion')
    .description('print the shell completion script for bash, zsh or fish (the .deb and install.sh install them)')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .action(async (shell: 'bash' | 'zsh' | 'fish') => {
      process.stdout.write((await commands.completion()).completionScript(buildProgram(), shell));
    });

  program.addHelpText('after', exitCodesFooter());
  return program;
}

let exitCode = 0;
function setExit(code: number): void {
  exitCode = code;
}

/**
 * A command asked for --json failed before printing its answer: the failure is that answer, one
 * object on stdout (the message is on stderr as well), so a script reading stdout always gets JSON.
 */
function jsonFailure(argv: readonly string[], error: string, message: string, exit: number): void {
  if (!argv.slice(2).includes('--json') || jsonPrinted()) return;
  process.stdout.write(`${JSON.stringify({ ok: false, error, message, exit })}\n`);
}

/** Parse argv, run the command, and return the exit code. Never throws. */
export async function main(argv: string[]): Promise<number> {
  exitCode = 0;
  try {
    await buildProgram().parseAsync(argv);
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      const usage = new UsageError(err.message);
      jsonFailure(argv, usage.code, err.message.replace(/^error: /, ''), exitCodeOf(usage));
      return exitCodeOf(usage);
    }
    const code = exitCodeOf(err);
    const label = err instanceof WcfError ? err.code : 'internal error';
    process.stderr.write(`wcf-agent: ${label}: ${errorMessage(err)}\n`);
    if (!(err instanceof WcfError) && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
    jsonFailure(argv, err instanceof WcfError ? err.code : 'WCF_ERR_INTERNAL', errorMessage(err), code);
    return code;
  }
}
