import { accessSync, constants } from 'node:fs';
import { ConfigError } from '../../errors.js';
import { loadConfig, resolveConfigPath, type AgentConfig } from '../../config/load.js';
import { parseListen } from '../../metrics/listen.js';
import type { GlobalOptions } from '../context.js';

/**
 * Checks beyond the loader's (schema, owned names, token_file readable): files
 * the agent opens later, and metrics_listen. Returns `path: message` problems
 * and notes (warnings that do not fail the check).
 */
export function extraConfigProblems(config: AgentConfig): { problems: string[]; notes: string[] } {
  const problems: string[] = [];
  const notes: string[] = [];
  if (config.ca_file !== undefined) {
    try {
      accessSync(config.ca_file, constants.R_OK);
    } catch (err) {
      problems.push(`ca_file: cannot read ${config.ca_file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  if (config.metrics_listen !== undefined) {
    try {
      const l = parseListen(config.metrics_listen);
      if (!l.loopback) notes.push(`metrics_listen: ${l.host} is not a loopback address; the metrics endpoint will be reachable from the network`);
    } catch (err) {
      problems.push(...(err instanceof ConfigError ? err.problems : [String(err)]));
    }
  }
  if (config.allowlist.length === 0) notes.push('allowlist: empty; add your admin/bastion hosts so a feed entry can never lock you out');
  return { problems, notes };
}

/**
 * `check-config` for systemd ExecStartPre: validate config.json and what it
 * points to. Touches nothing: no network, no firewall, no state writes.
 * Exit 0 (`config ok: PATH`) or 2 (the problems, one `path: message` line each).
 */
export async function checkConfigCommand(opts: GlobalOptions): Promise<number> {
  const path = resolveConfigPath(opts.config);
  const config = loadConfig(path); // ConfigError: main prints the problems, exit 2
  const { problems, notes } = extraConfigProblems(config);
  if (problems.length) throw new ConfigError(`${path} is not valid`, problems);
  for (const n of notes) process.stderr.write(`note: ${n}\n`);
  process.stdout.write(`config ok: ${path}\n`);
  return 0;
}
