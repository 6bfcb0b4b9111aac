import { ERROR_CODES, EXIT_FILE_MALICIOUS, EXIT_INTERNAL } from '../errors.js';

/**
 * What each exit status means, once: the help's footer says the short words, wcf-agent(8) the long
 * ones, so the two cannot list different statuses. The mapping of errors to statuses and reported
 * codes stays in src/errors.ts.
 */
export interface ExitStatus {
  readonly exit: number;
  /** For `wcf-agent --help`'s footer. */
  readonly short: string;
  /** For the man page (Markdown-light: `code`). */
  readonly long: string;
}

export const EXIT_STATUSES: readonly ExitStatus[] = [
  { exit: 0, short: 'ok', long: 'ok (also when a stored-configuration value was rejected, or the shrink guard held a pull back: both are reported)' },
  { exit: EXIT_INTERNAL, short: 'internal error', long: 'internal error (a bug: please report it)' },
  { exit: 2, short: 'bad usage or config', long: 'bad usage or bad `config.json` (one `path: message` line per problem)' },
  {
    exit: 3,
    short: 'API unreachable or unusable',
    long: 'the API unreachable, refused (401/403), an error status, or an unusable answer (bad JSON, wrong shape, too large); or no agent record for `agid` at first contact',
  },
  {
    exit: 4,
    short: 'firewall, resolver or state dir error',
    long: "a firewall command failed (its stderr is shown), a firewall object with the configured name is not the agent's, a resolver command or file failed, or the state dir is unusable",
  },
  { exit: EXIT_FILE_MALICIOUS, short: '(file) known malicious', long: '`file` only: the platform knows the file as malicious (for scripts; not an error of the agent)' },
];

/** Every exit status an error of src/errors.ts maps to has a meaning above (thrown at load, so a test fails at once). */
for (const c of Object.values(ERROR_CODES)) {
  if (!EXIT_STATUSES.some((s) => s.exit === c.exit)) throw new Error(`exit status ${c.exit} (src/errors.ts) has no meaning in src/cli/exit-codes.ts`);
}

/** The reported codes, lowest first: 0 and 1 are not errors of the table, the rest come from src/errors.ts. */
export function reportedCodes(): { code: number; describe: string }[] {
  return [{ code: 0, describe: 'ok' }, { code: 1, describe: 'internal error' }, ...Object.values(ERROR_CODES).map((c) => ({ code: c.report, describe: c.describe }))].sort(
    (a, b) => a.code - b.code,
  );
}

/** The reported codes each exit status carries, lowest first. */
export function reportsByExit(): Map<number, number[]> {
  const reports = new Map<number, number[]>();
  for (const c of Object.values(ERROR_CODES)) reports.set(c.exit, [...(reports.get(c.exit) ?? []), c.report].sort((a, b) => a - b));
  return reports;
}

/** `wcf-agent --help`'s footer: every exit status in order, then every reported code in order. */
export function exitCodesFooter(): string {
  return (
    `\nExit codes: ${EXIT_STATUSES.map((s) => `${s.exit} ${s.short}`).join(', ')}.\n` +
    `Reported codes: ${reportedCodes()
      .map((c) => `${c.code} ${c.describe}`)
      .join('; ')}.\n` +
    'More: man 8 wcf-agent, or wcf-agent COMMAND --help.'
  );
}
