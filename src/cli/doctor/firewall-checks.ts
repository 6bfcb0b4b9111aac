import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentConfig } from '../../config/load.js';
import { errorMessage } from '../../errors.js';
import { detectPlugin } from '../../firewall/detect.js';
import { stderrMatches } from '../../firewall/exec.js';
import { iptablesChainExists } from '../../metrics/counters.js';
import type { CommandRunner, OwnedNames, PluginName } from '../../firewall/types.js';
import { check, type CheckResult } from './check.js';

export const TOOLS = ['nft', 'ipset', 'iptables', 'iptables-restore'] as const;
export type Tool = (typeof TOOLS)[number];
/** The tools each backend runs. */
const NEEDS: Record<Exclude<PluginName, 'dry-run'>, readonly Tool[]> = {
  nftables: ['nft'],
  ipset: ['ipset', 'iptables', 'iptables-restore'],
  iptables: ['iptables', 'iptables-restore'],
};

/** `TOOL --version` for each tool: its first output line, or null when missing or failing. */
export async function probeTools(runner: CommandRunner): Promise<Map<Tool, string | null>> {
  const out = new Map<Tool, string | null>();
  await Promise.all(
    TOOLS.map(async (t) => {
      try {
        const r = await runner.run(t, ['--version']);
        out.set(t, (r.stdout.trim() || r.stderr.trim()).split('\n')[0]!.trim() || t);
      } catch {
        out.set(t, null);
      }
    }),
  );
  return out;
}

export function toolsCheck(plugin: AgentConfig['plugin'], tools: Map<Tool, string | null>): CheckResult {
  const found = TOOLS.filter((t) => tools.get(t)).map((t) => tools.get(t)!);
  const missing = TOOLS.filter((t) => !tools.get(t));
  const text = `found: ${found.join('; ') || 'none'}${missing.length ? `; missing: ${missing.join(', ')}` : ''}`;
  if (plugin === 'dry-run') return check('firewall', 'firewall tools', 'ok', `${text} (not needed for dry-run)`);
  const complete = (p: keyof typeof NEEDS) => NEEDS[p].every((t) => tools.get(t));
  if (plugin === 'auto') {
    if ((Object.keys(NEEDS) as (keyof typeof NEEDS)[]).some(complete)) return check('firewall', 'firewall tools', 'ok', text);
    return check('firewall', 'firewall tools', 'fail', text, 'install nftables (or ipset and iptables) and make sure they are in PATH');
  }
  const lacking = NEEDS[plugin].filter((t) => !tools.get(t));
  if (lacking.length === 0) return check('firewall', 'firewall tools', 'ok', text);
  return check('firewall', 'firewall tools', 'fail', `${text}; plugin ${plugin} needs ${lacking.join(', ')}`, `install ${lacking.join(', ')} or choose another plugin in config.json`);
}

/** Which backend the agent would use; `auto` runs the same read-only probes as the agent. */
export async function pluginCheck(plugin: AgentConfig['plugin'], runner: CommandRunner): Promise<{ result: CheckResult; effective: PluginName | undefined }> {
  let auto: PluginName | undefined;
  let autoError: string | undefined;
  try {
    auto = await detectPlugin(runner);
  } catch (err) {
    autoError = errorMessage(err);
  }
  const autoText = auto ? `auto would pick ${auto}` : `auto would find no usable backend: ${autoError}`;
  if (plugin === 'auto') {
    if (auto) return { result: check('firewall', 'plugin', 'ok', `plugin auto: ${autoText}`), effective: auto };
    return { result: check('firewall', 'plugin', 'fail', `plugin auto: ${autoText}`, 'run as root (CAP_NET_ADMIN), load nf_tables/ip_tables, or set plugin explicitly'), effective: undefined };
  }
  if (plugin === 'dry-run') return { result: check('firewall', 'plugin', 'ok', `plugin dry-run: no firewall is touched (${autoText})`), effective: 'dry-run' };
  return { result: check('firewall', 'plugin', 'ok', `plugin ${plugin} (configured; ${autoText})`), effective: plugin };
}

export type Presence = 'present' | 'absent' | string;

async function presence(runner: CommandRunner, file: string, args: string[], absent: RegExp): Promise<Presence> {
  try {
    await runner.run(file, args);
    return 'present';
  } catch (err) {
    return stderrMatches(err, absent) ? 'absent' : errorMessage(err);
  }
}

const NOT_YET = 'not created yet (the first sync creates it)';

/**
 * Whether each kernel object the agent owns for `plugin` is there, read-only (doctor, and
 * `flush` to say when nothing was there): `present`, `absent`, or why it could not be read.
 */
export async function ownedObjects(plugin: Exclude<PluginName, 'dry-run'>, names: OwnedNames, runner: CommandRunner): Promise<Array<[string, Presence]>> {
  const parts: Array<[string, Presence]> = [];
  if (plugin === 'nftables') {
    parts.push([`nft table inet ${names.tableName}`, await presence(runner, 'nft', ['-t', 'list', 'table', 'inet', names.tableName], /No such file or directory/i)]);
  } else {
    if (plugin === 'ipset') {
      let set: Presence;
      try {
        const { stdout } = await runner.run('ipset', ['list', '-n']);
        set = stdout.split('\n').some((l) => l.trim() === names.setName) ? 'present' : 'absent';
      } catch (err) {
        set = errorMessage(err);
      }
      parts.push([`ipset ${names.setName}`, set]);
    }
    let chain: Presence;
    try {
      chain = (await iptablesChainExists(runner, names.chainName)) ? 'present' : 'absent';
    } catch (err) {
      chain = errorMessage(err);
    }
    parts.push([`iptables chain ${names.chainName}`, chain]);
  }
  return parts;
}

/** The owned objects of `plugin`, read-only: present, absent (warn), or unreadable (warn). */
export async function objectsCheck(plugin: PluginName, names: OwnedNames, runner: CommandRunner, config: AgentConfig): Promise<CheckResult> {
  if (plugin === 'dry-run') {
    const out = config.dry_run_output ?? join(config.state_dir, `dry-run.${config.dry_run_format}`);
    if (out === '-') return check('firewall', 'firewall objects', 'ok', 'dry-run renders to stdout');
    return existsSync(out)
      ? check('firewall', 'firewall objects', 'ok', `dry-run output ${out} present`)
      : check('firewall', 'firewall objects', 'warn', `dry-run output ${out} ${NOT_YET}`);
  }
  const parts = await ownedObjects(plugin, names, runner);
  const text = parts.map(([what, p]) => `${what} ${p === 'present' ? 'present' : p === 'absent' ? 'absent' : 'unreadable'}`).join(', ');
  const errors = parts.filter(([, p]) => p !== 'present' && p !== 'absent').map(([w, p]) => `${w}: ${p}`);
  if (errors.length) return check('firewall', 'firewall objects', 'warn', `cannot read: ${errors.join('; ')}`, 'run doctor as the service user (root or CAP_NET_ADMIN)');
  if (parts.every(([, p]) => p === 'present')) return check('firewall', 'firewall objects', 'ok', text);
  if (parts.every(([, p]) => p === 'absent')) return check('firewall', 'firewall objects', 'warn', `${text}: ${NOT_YET}`, 'absent is also normal while running is off in the stored configuration');
  return check('firewall', 'firewall objects', 'warn', `${text}: incomplete`, 'the next sync re-creates what is missing');
}
