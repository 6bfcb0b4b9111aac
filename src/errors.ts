// Every failure the agent can meet is one of these classes. Each carries a stable
// string `code` (for logs and --json), and maps in ONE place (below) to the process
// exit code and to the numeric `code` reported to the API (the state report).

export type ErrorCode =
  | 'WCF_ERR_USAGE'
  | 'WCF_ERR_CONFIG'
  | 'WCF_ERR_SERVER_CONFIG'
  | 'WCF_ERR_API_UNREACHABLE'
  | 'WCF_ERR_API_AUTH'
  | 'WCF_ERR_API_STATUS'
  | 'WCF_ERR_API_RESPONSE'
  | 'WCF_ERR_AGENT_UNKNOWN'
  | 'WCF_ERR_FIREWALL'
  | 'WCF_ERR_NOT_OWNED'
  | 'WCF_ERR_STATE'
  | 'WCF_ERR_GUARD'
  | 'WCF_ERR_DNS';

export class WcfError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Bad command line. */
export class UsageError extends WcfError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WCF_ERR_USAGE', message, options);
  }
}

/** config.json is missing, unreadable or invalid. `problems` are `path: message` lines. */
export class ConfigError extends WcfError {
  readonly problems: string[];
  constructor(message: string, problems: string[] = [], options?: { cause?: unknown }) {
    super('WCF_ERR_CONFIG', problems.length ? `${message}\n  ${problems.join('\n  ')}` : message, options);
    this.problems = problems;
  }
}

/** The server's stored configuration for this agent (the `config` of GET /feedback) has invalid values. */
export class ServerConfigError extends WcfError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super('WCF_ERR_SERVER_CONFIG', `stored agent configuration rejected: ${problems.join('; ')}`);
    this.problems = problems;
  }
}

/** Network failure: DNS, refused, reset, timeout. */
export class ApiUnreachableError extends WcfError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WCF_ERR_API_UNREACHABLE', message, options);
  }
}

/** 401/403 from the API. */
export class ApiAuthError extends WcfError {
  readonly status: number;
  constructor(status: number, message: string) {
    super('WCF_ERR_API_AUTH', message);
    this.status = status;
  }
}

/** Any other non-2xx status. */
export class ApiStatusError extends WcfError {
  readonly status: number;
  constructor(status: number, message: string) {
    super('WCF_ERR_API_STATUS', message);
    this.status = status;
  }
}

/**
 * Body is not JSON, too large, or does not match the expected shape. `retryable`:
 * a truncated body may be a passing fault; a well-formed wrong shape will not fix
 * itself on an immediate retry.
 */
export class ApiResponseError extends WcfError {
  readonly retryable: boolean;
  constructor(message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super('WCF_ERR_API_RESPONSE', message, options);
    this.retryable = options?.retryable ?? false;
  }
}

/**
 * The API has no record for this `agid` and this agent has never seen one: most likely a
 * mistyped `agid`, not a record deleted by an administrator (that needs a record seen before).
 */
export class AgentUnknownError extends WcfError {
  readonly agid: string;
  constructor(agid: string) {
    super('WCF_ERR_AGENT_UNKNOWN', `the API has no agent record for agid ${JSON.stringify(agid)}: check agid in config.json (wcf-agent agents list shows the records)`);
    this.agid = agid;
  }
}

/** A firewall command failed; `stderr` is the failing command's own words. */
export class FirewallError extends WcfError {
  readonly command: string | undefined;
  readonly stderr: string | undefined;
  constructor(message: string, details: { command?: string; stderr?: string; cause?: unknown } = {}, code: ErrorCode = 'WCF_ERR_FIREWALL') {
    super(code, message, { cause: details.cause });
    this.command = details.command;
    this.stderr = details.stderr;
  }

  /** `err` with a new message, keeping the failing command and its stderr when it had them. */
  static rewrap(err: unknown, message: string): FirewallError {
    return new FirewallError(message, {
      command: err instanceof FirewallError ? err.command : undefined,
      stderr: err instanceof FirewallError ? err.stderr : undefined,
      cause: err,
    });
  }
}

/**
 * A firewall object with one of the agent's configured names exists and was not
 * created by the agent (no ownership marker, and not the exact shape an earlier
 * version made): the agent refuses to touch it. `object` names it for people.
 */
export class NotOwnedError extends FirewallError {
  readonly object: string;
  constructor(object: string, why: string) {
    super(
      `${object} exists and was not created by wcf-agent (${why}); refusing to take it over. ` +
        'Choose another name in config.json (set_name, chain_name, table_name), or remove that object if it is a leftover',
      {},
      'WCF_ERR_NOT_OWNED',
    );
    this.object = object;
  }
}

/** The state directory cannot be read or written. */
export class StateError extends WcfError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('WCF_ERR_STATE', message, options);
  }
}

/** Another live wcf-agent process holds the state dir's lock. */
export class LockHeldError extends StateError {
  /** Its PID, when it recorded one (in its own PID namespace, which `who` names when it is not ours). */
  readonly holder: number | undefined;
  /** "pid 123", with the PID namespace when it is another. */
  readonly who: string;
  constructor(holder: number | undefined, who: string, path: string) {
    super(`another wcf-agent (${who}) holds ${path}; is the daemon running?`);
    this.holder = holder;
    this.who = who;
  }
}

/** A daemon serves the state dir: a second daemon, or a command that would fight the first, is refused. */
export class DaemonRunningError extends StateError {
  readonly pid: number | undefined;
  constructor(message: string, pid: number | undefined) {
    super(message);
    this.pid = pid;
  }
}

/** The shrink guard refused a pull that would remove too much at once (lifecycle). */
export class GuardError extends WcfError {
  constructor(message: string) {
    super('WCF_ERR_GUARD', message);
  }
}

/** A resolver command failed or a resolver file could not be written; the previous DNS state is kept. */
export class DnsError extends WcfError {
  readonly command: string | undefined;
  readonly stderr: string | undefined;
  constructor(message: string, details: { command?: string; stderr?: string; cause?: unknown } = {}) {
    super('WCF_ERR_DNS', message, { cause: details.cause });
    this.command = details.command;
    this.stderr = details.stderr;
  }
}

interface CodeMapping {
  exit: number;
  report: number;
  describe: string;
}

/** The one table mapping error classes to exit codes and reported codes. Documented in docs/commands.md; wcf-agent(8) prints it. */
export const ERROR_CODES: Record<ErrorCode, CodeMapping> = {
  WCF_ERR_USAGE: { exit: 2, report: 10, describe: 'bad command line' },
  WCF_ERR_CONFIG: { exit: 2, report: 11, describe: 'local config.json invalid' },
  WCF_ERR_SERVER_CONFIG: { exit: 0, report: 12, describe: 'stored configuration from the API invalid; previous values kept' },
  WCF_ERR_API_UNREACHABLE: { exit: 3, report: 20, describe: 'API unreachable (DNS, refused, reset, timeout)' },
  WCF_ERR_API_AUTH: { exit: 3, report: 21, describe: 'API refused the token (401/403)' },
  WCF_ERR_API_STATUS: { exit: 3, report: 22, describe: 'API answered with an error status' },
  WCF_ERR_API_RESPONSE: { exit: 3, report: 23, describe: 'API answer unusable (bad JSON, wrong shape, too large)' },
  WCF_ERR_AGENT_UNKNOWN: { exit: 3, report: 24, describe: 'the API has no record for this agid, and this agent never had one (check agid)' },
  WCF_ERR_FIREWALL: { exit: 4, report: 30, describe: 'firewall command failed; previous set kept' },
  WCF_ERR_NOT_OWNED: { exit: 4, report: 32, describe: 'a firewall object with the configured name belongs to someone else; nothing was changed' },
  WCF_ERR_STATE: { exit: 4, report: 40, describe: 'state directory unreadable or unwritable' },
  WCF_ERR_GUARD: { exit: 0, report: 50, describe: 'shrink guard held back a pull that would remove too much at once' },
  WCF_ERR_DNS: { exit: 4, report: 31, describe: 'resolver command or file failed; previous DNS state kept' },
};

export const EXIT_INTERNAL = 1;
/** `file DIGEST|PATH`: the platform knows the file as malicious (an answer for scripts, not a failure). */
export const EXIT_FILE_MALICIOUS = 5;

export function exitCodeOf(err: unknown): number {
  return err instanceof WcfError ? ERROR_CODES[err.code].exit : EXIT_INTERNAL;
}

/** Numeric `code` for the state report; 1 = unexpected internal error. */
export function reportCodeOf(err: unknown): number {
  return err instanceof WcfError ? ERROR_CODES[err.code].report : 1;
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
