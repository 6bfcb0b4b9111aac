import { Command, CommanderError, Option } from 'commander';
import { ERROR_CODES, UsageError, WcfError, exitCodeOf, errorMessage } from '../errors.js';
import { AGENT_VERSION } from '../version.js';
import { planCommand } from './commands/plan.js';
import { syncCommand } from './commands/sync.js';
import { statusCommand } from './commands/status.js';
import { flushCommand } from './commands/flush.js';
import { runCommand } from './commands/run.js';

const configOption = () => new Option('-c, --config <path>', 'config file (default: $WCF_AGENT_CONFIG, then /etc/wcf-agent/config.json)');

export function buildProgram(): Command {
  const program = new Command('wcf-agent')
    .description('Keeps the host firewall in step with a threat-intelligence feed.')
    .version(AGENT_VERSION, '-V, --version')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command('run')
    .description('long-running daemon: apply the last known good set, then sync every sync_time minutes')
    .addOption(configOption())
    .option('--dry-run', 'use the dry-run backend (render rules to a file, touch no firewall)')
    .action(async (o) => {
      setExit(await runCommand(o));
      // Nothing may keep a stopped daemon alive (a timer, a socket): exit now. Logs are written synchronously.
      process.exit(exitCode);
    });

  program
    .command('sync')
    .description('run one cycle (pull, select, apply, report)')
    .requiredOption('--once', 'one cycle, then exit (required: the daemon is `run`)')
    .addOption(configOption())
    .option('--dry-run', 'use the dry-run backend (render rules to a file, touch no firewall)')
    .option('--force', 'apply even if the shrink guard would hold the pull back')
    .option('--json', 'print the outcome as one JSON object on stdout')
    .action(async (o) => setExit(await syncCommand(o)));

  program
    .command('plan')
    .description('show what would be applied now; touches neither the firewall nor the state')
    .addOption(configOption())
    .option('--json', 'print every selected entry as JSON on stdout')
    .option('--limit <n>', 'rows to show in the table (default 50)')
    .action(async (o) => setExit(await planCommand(o)));

  program
    .command('status')
    .description('last sync, counts, next sync, code, and the configuration in force')
    .addOption(configOption())
    .option('--json', 'print as JSON on stdout')
    .action(async (o) => setExit(await statusCommand(o)));

  program
    .command('flush')
    .description('remove every firewall object the agent created (and nothing else)')
    .addOption(configOption())
    .option('--dry-run', 'flush the dry-run backend files instead')
    .action(async (o) => setExit(await flushCommand(o)));

  program.addHelpText(
    'after',
    `\nExit codes: 0 ok, 2 bad usage or config, 3 API unreachable or unusable, 4 firewall error.\n` +
      `Reported codes: ${Object.values(ERROR_CODES).map((c) => `${c.report} ${c.describe}`).join('; ')}.`,
  );
  return program;
}

let exitCode = 0;
function setExit(code: number): void {
  exitCode = code;
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
      return exitCodeOf(new UsageError(err.message));
    }
    const code = exitCodeOf(err);
    const label = err instanceof WcfError ? err.code : 'internal error';
    process.stderr.write(`wcf-agent: ${label}: ${errorMessage(err)}\n`);
    if (!(err instanceof WcfError) && err instanceof Error && err.stack) process.stderr.write(err.stack + '\n');
    return code;
  }
}
