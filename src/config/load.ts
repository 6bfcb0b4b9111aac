import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { jsonSyntaxError } from './json-position.js';
import { placeholderProblems } from './placeholders.js';
import { missingKeyProblem } from './required.js';
import { CONFIG_KEYS, configSchema, formatIssues, type ConfigFile } from './schema.js';
import { refuseUntrusted } from './trust.js';

export const DEFAULT_CONFIG_PATH = '/etc/wcf-agent/config.json';

export interface AgentConfig extends Omit<ConfigFile, 'token' | 'token_file'> {
  /** The API token, read from `token` or `token_file`. */
  readonly token: string;
  readonly token_file?: string | undefined;
  /** Absolute path of the file this came from. */
  readonly configPath: string;
}

/** Precedence: --config, then WCF_AGENT_CONFIG, then /etc/wcf-agent/config.json. */
export function resolveConfigPath(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(flag ?? env.WCF_AGENT_CONFIG ?? DEFAULT_CONFIG_PATH);
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : String((err as Error).message);
    throw new ConfigError(`cannot read ${what} ${path}: ${why}`, [], { cause: err });
  }
}

export interface LoadOptions {
  /**
   * The admin commands (agents, report, urls, file) speak for the platform, not for this agent:
   * they need base_url and the token only, so `agents list` can be how a new host finds its agid.
   */
  readonly agidOptional?: boolean;
}

/** What `agid` reads as when an admin command runs with a config that has none yet. */
export const NO_AGID = '(none)';

/** Parse and validate config text; every problem is one `path: message` line. */
export function parseConfig(text: string, configPath: string, options: LoadOptions = {}): AgentConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(jsonSyntaxError(text, err, configPath), [], { cause: err });
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`${configPath} is not valid`, ['(root): expected a JSON object']);
  }
  // Keys starting with "//" are comments (the npm package.json convention), so
  // config.json.example can document every key in the file itself.
  const withoutComments = Object.fromEntries(Object.entries(raw).filter(([k]) => !k.startsWith('//')));
  if (options.agidOptional && !('agid' in withoutComments)) withoutComments.agid = NO_AGID;
  const parsed = configSchema.safeParse(withoutComments);
  if (!parsed.success) {
    // A required key that is absent says where its value comes from, not zod's "expected string, received undefined".
    const absent = new Set(
      parsed.error.issues
        .filter((i) => i.path.length === 1 && !(String(i.path[0]) in withoutComments) && (i.code === 'invalid_type' || (i.path[0] === 'token' && !('token_file' in withoutComments))))
        .map((i) => String(i.path[0])),
    );
    const problems = formatIssues(parsed.error, CONFIG_KEYS).map((p) => {
      const key = p.slice(0, p.indexOf(':'));
      return (absent.has(key) && missingKeyProblem(key, configPath)) || p;
    });
    throw new ConfigError(`${configPath} is not valid`, problems);
  }
  const file = parsed.data;

  const baseDir = dirname(configPath);
  // Relative paths are taken relative to the config file, so a config and its
  // state dir can travel together (demo, tests); production configs use absolute paths.
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));

  let token = file.token;
  const tokenFile = file.token_file === undefined ? undefined : abs(file.token_file);
  if (token === undefined && tokenFile !== undefined) {
    refuseUntrusted(tokenFile, 'token_file');
    token = readText(tokenFile, 'token_file').trim();
    if (!token) throw new ConfigError(`${configPath} is not valid`, [`token_file: ${tokenFile} is empty`]);
  }
  const placeholders = placeholderProblems({ agid: file.agid, token, base_url: file.base_url }).map((p) =>
    file.token === undefined ? p.replace(/^token: still/, `token_file: ${tokenFile} holds`) : p,
  );
  if (placeholders.length) throw new ConfigError(`${configPath} is not valid`, placeholders);
  const { token: _t, token_file: _tf, ...rest } = file;
  const caFile = file.ca_file === undefined ? undefined : abs(file.ca_file);
  if (caFile !== undefined) refuseUntrusted(caFile, 'ca_file');
  return {
    ...rest,
    token: token!,
    token_file: tokenFile,
    state_dir: abs(file.state_dir),
    ca_file: caFile,
    dry_run_output: file.dry_run_output === undefined || file.dry_run_output === '-' ? file.dry_run_output : abs(file.dry_run_output),
    configPath,
  };
}

/** Read and validate config.json; as root, only one no other user can change (see trust.ts). */
export function loadConfig(configPath: string, options: LoadOptions = {}): AgentConfig {
  refuseUntrusted(configPath, 'config');
  return parseConfig(readText(configPath, 'config file'), configPath, options);
}
