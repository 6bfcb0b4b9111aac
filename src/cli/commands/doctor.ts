import { resolveConfigPath, type AgentConfig } from '../../config/load.js';
import { errorMessage } from '../../errors.js';
import { createPlugin, createRunner, netnsPrefix, probeTools } from '../../firewall/index.js';
import { createLogger, type Logger } from '../../log.js';
import { pluginOptions, type GlobalOptions } from '../context.js';
import { printJson } from '../format.js';
import { apiChecks } from '../doctor/api-checks.js';
import { check, doctorExitCode, type CheckResult } from '../doctor/check.js';
import { objectsCheck, pluginCheck, toolsCheck } from '../doctor/firewall-checks.js';
import { allowlistCheck, capabilityCheck, netnsCheck, stateDirCheck } from '../doctor/host-checks.js';
import { kernelProtected, protectedSetCheck } from '../doctor/protected-check.js';
import type { Cidr } from '../../net/ipv4.js';
import { openPlugin } from '../context.js';
import { dnsChecks } from '../doctor/dns-checks.js';
import { extraConfigProblems } from './check-config.js';
import { missingKernelRights } from '../kernel-rights.js';
import { loadAgentConfig } from '../load-config.js';

/** Firewall tools answer `--version` and read-only listings quickly; a hung one must not hang doctor. */
const COMMAND_TIMEOUT_MS = 15_000;

function configCheck(path: string): { result: CheckResult; config: AgentConfig | undefined } {
  let config: AgentConfig;
  try {
    config = loadAgentConfig(path);
  } catch (err) {
    return { result: check('config', 'config', 'fail', errorMessage(err), 'fix the lines above (`wcf-agent check-config` re-checks); the checks that need the config were skipped'), config: undefined };
  }
  const { problems, notes, warnings } = extraConfigProblems(config);
  if (problems.length) return { result: check('config', 'config', 'fail', `${path} is not valid\n  ${problems.join('\n  ')}`, 'fix the lines above'), config };
  const extra = notes.filter((n) => !n.startsWith('allowlist')); // the allowlist check says it
  if (warnings.length) {
    return { result: check('config', 'config', 'warn', `${path} is valid, but\n  ${[...warnings, ...extra].join('\n  ')}`, 'keep the token private: mode 0600 and an https base_url'), config };
  }
  return { result: check('config', 'config', 'ok', `${path} is valid${extra.length ? `; ${extra.join('; ')}` : ''}`), config };
}

/** Every check, in display order. Read-only: no firewall change, no state write (bar a removed temp file), no API write. */
export async function runChecks(path: string, logger: Logger): Promise<CheckResult[]> {
  const { result, config } = configCheck(path);
  // With `netns`, every firewall command runs inside that namespace, as the agent's own do (openPlugin).
  const netns = config?.netns;
  const runner = createRunner(netnsPrefix(netns), { timeoutMs: COMMAND_TIMEOUT_MS });
  const plugin = config?.plugin ?? 'auto';
  // Without the capability every kernel read is refused: the CAP_NET_ADMIN check says so once, and
  // the checks that would read the kernel say they were not run instead of repeating the refusal.
  const unread = missingKernelRights(plugin, { write: false });
  const [api, ns, tools, detected] = await Promise.all([
    config ? apiChecks(config, logger) : Promise.resolve([]),
    netns ? netnsCheck(netns, runner) : Promise.resolve(undefined),
    probeTools(runner),
    unread ? Promise.resolve(unprobedPlugin(plugin, unread)) : pluginCheck(plugin, runner, config?.maximum_rules ?? 0),
  ]);
  const out: CheckResult[] = [result, ...api, ...(ns ? [ns.result] : []), toolsCheck(plugin, tools), detected.result, capabilityCheck(plugin)];
  if (config) {
    if (unread) out.push(check('firewall', 'firewall objects', 'warn', `not read: ${unread}`, 'run doctor as root (sudo) or as the service user'));
    else if (detected.effective) {
      out.push(await objectsCheck(createPlugin(detected.effective, { ...pluginOptions(config, logger), runner })));
    }
    out.push(stateDirCheck(config.state_dir), await allowlistCheck(config, netns ? { name: netns, addresses: ns?.addresses } : undefined));
    const effective = detected.effective;
    // Only what the protected set needs (a large nft set is never listed whole for it); a backend
    // that cannot be opened or read is said in the message.
    const kernel = unread
      ? () => Promise.reject(new Error(unread))
      : effective
        ? async (members: readonly Cidr[]) => kernelProtected(await openPlugin(config, logger, false, effective), members)
        : () => undefined;
    out.push(await protectedSetCheck(config, logger, kernel));
    out.push(...(await dnsChecks(config)));
  }
  return out;
}

/** The plugin check when the kernel cannot be read: a configured backend is taken as it is; `auto` cannot choose. */
function unprobedPlugin(plugin: AgentConfig['plugin'], why: string): { result: CheckResult; effective: undefined } {
  if (plugin === 'auto') return { result: check('firewall', 'plugin', 'fail', `plugin auto: the backends were not probed: ${why}`, 'run doctor as root (sudo), or set plugin in config.json'), effective: undefined };
  return { result: check('firewall', 'plugin', 'ok', `plugin ${plugin} (configured; auto not probed: ${why})`), effective: undefined };
}

const MARK = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' } as const;

export function printChecks(results: readonly CheckResult[]): void {
  const width = Math.max(...results.map((r) => r.name.length));
  const lines: string[] = [];
  for (const r of results) {
    const [first, ...rest] = r.message.split('\n');
    lines.push(`${MARK[r.status]}  ${r.name.padEnd(width)}  ${first}`);
    const indent = ' '.repeat(width + 8);
    for (const l of rest) lines.push(`${indent}${l.trim()}`);
    if (r.hint && r.status !== 'ok') lines.push(`${indent}hint: ${r.hint}`);
  }
  const n = (s: CheckResult['status']) => results.filter((r) => r.status === s).length;
  lines.push('', `${n('ok')} ok, ${n('warn')} warn, ${n('fail')} fail`);
  process.stdout.write(lines.join('\n') + '\n');
}

/**
 * `wcf-agent doctor`: is this host ready to run the agent? Exit 0 when nothing
 * failed (warnings allowed), else the code of the most basic failure:
 * 2 config, 3 API, 4 firewall or state dir, 1 anything else (clock).
 */
export async function doctorCommand(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const path = resolveConfigPath(opts.config);
  const logger = createLogger({ level: process.env.WCF_LOG_LEVEL ? undefined : 'warn' });
  const results = await runChecks(path, logger);
  const code = doctorExitCode(results);
  if (opts.json) {
    await printJson({ checks: results.map(({ name, status, message, hint }) => ({ name, status, message, hint })), ok: code === 0 });
  } else {
    printChecks(results);
  }
  return code;
}
