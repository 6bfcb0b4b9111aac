import { accessSync, constants } from 'node:fs';
import { ConfigError, exitCodeOf } from '../../errors.js';
import { resolveConfigPath, type AgentConfig } from '../../config/load.js';
import { parseListen } from '../../metrics/listen.js';
import { tokenExposure } from '../../config/exposure.js';
import { nftScaleWarning } from '../../firewall/nft/scale.js';
import type { GlobalOptions } from '../context.js';
import { printJson } from '../format.js';
import { loadAgentConfig } from '../load-config.js';

/**
 * Checks beyond the loader's (schema, owned names, token_file readable): files
 * the agent opens later, and metrics_listen. Returns `path: message` problems
 * and notes (hints that do not fail the check), and warnings (token exposure: doctor shows them as warn).
 */
export function extraConfigProblems(config: AgentConfig): { problems: string[]; notes: string[]; warnings: string[] } {
  const exposure = tokenExposure(config);
  const problems: string[] = [...exposure.problems];
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
  const scale = config.plugin === 'nftables' ? nftScaleWarning(config.maximum_rules) : undefined;
  return { problems, notes, warnings: [...exposure.warnings, ...(scale ? [scale] : [])] };
}

/**
 * `check-config` for systemd ExecStartPre: validate config.json and what it
 * points to. Touches nothing: no network, no firewall, no state writes.
 * Exit 0 (`config ok: PATH`) or 2 (the problems, one `path: message` line each).
 * With --json: {ok, path, problems, warnings, notes} on stdout, also when it is not valid.
 */
export async function checkConfigCommand(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const path = resolveConfigPath(opts.config);
  let result: { problems: string[]; notes: string[]; warnings: string[] };
  try {
    result = extraConfigProblems(loadAgentConfig(path));
    if (result.problems.length) throw new ConfigError(`${path} is not valid`, result.problems);
  } catch (err) {
    // ConfigError: main prints the problems on stderr, exit 2; with --json they are the answer too.
    if (opts.json && err instanceof ConfigError) {
      await printJson({ ok: false, path, error: err.code, message: err.message.split('\n')[0], problems: err.problems, warnings: [], notes: [] });
      process.stderr.write(`wcf-agent: ${err.code}: ${err.message}\n`);
      return exitCodeOf(err);
    }
    throw err;
  }
  const { notes, warnings } = result;
  if (opts.json) {
    await printJson({ ok: true, path, problems: [], warnings, notes });
    return 0;
  }
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  for (const n of notes) process.stderr.write(`note: ${n}\n`);
  process.stdout.write(`config ok: ${path}\n`);
  return 0;
}
