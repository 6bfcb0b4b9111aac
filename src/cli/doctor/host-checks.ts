import { randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { hostAddresses, listAddresses, resolveApiHost } from '../../host/protected-set.js';
import type { AgentConfig } from '../../config/load.js';
import { errorMessage } from '../../errors.js';
import type { CommandRunner } from '../../exec/runner.js';
import { check, type CheckResult } from './check.js';

const CAP_NET_ADMIN = 12n;

/** CAP_NET_ADMIN in the effective set, from `/proc/self/status` text; undefined if it cannot be read. */
export function hasNetAdmin(procStatus: string): boolean | undefined {
  const m = /^CapEff:\s*([0-9a-fA-F]+)\s*$/m.exec(procStatus);
  if (!m) return undefined;
  return (BigInt(`0x${m[1]}`) & (1n << CAP_NET_ADMIN)) !== 0n;
}

export function capabilityCheck(plugin: AgentConfig['plugin'], procStatus?: string): CheckResult {
  let text = procStatus;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/status', 'utf8');
    } catch {
      text = '';
    }
  }
  const has = hasNetAdmin(text);
  if (has === undefined) return check('firewall', 'CAP_NET_ADMIN', 'warn', 'cannot read the capabilities (/proc/self/status)');
  if (has) return check('firewall', 'CAP_NET_ADMIN', 'ok', 'CAP_NET_ADMIN available');
  if (plugin === 'dry-run') return check('firewall', 'CAP_NET_ADMIN', 'ok', 'CAP_NET_ADMIN missing, not needed for dry-run');
  return check('firewall', 'CAP_NET_ADMIN', 'fail', 'CAP_NET_ADMIN missing: firewall commands will be refused',
    'run as root (sudo wcf-agent doctor), or give the service AmbientCapabilities=CAP_NET_ADMIN in its systemd unit');
}

/** state_dir writable: create and remove a temp file. A missing dir is fine if the agent can create it. */
export function stateDirCheck(dir: string): CheckResult {
  if (!existsSync(dir)) {
    let parent = dirname(dir);
    while (!existsSync(parent) && parent !== dirname(parent)) parent = dirname(parent);
    try {
      accessSync(parent, constants.W_OK);
      return check('state', 'state dir', 'warn', `${dir} does not exist yet (the agent creates it)`);
    } catch {
      return check('state', 'state dir', 'fail', `${dir} does not exist and ${parent} is not writable`, `create it: install -d -m 0700 ${dir}`);
    }
  }
  if (!statSync(dir).isDirectory()) return check('state', 'state dir', 'fail', `${dir} is not a directory`, 'point state_dir at a directory');
  const probe = join(dir, `.doctor-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    writeFileSync(probe, '', { flag: 'wx', mode: 0o600 });
    unlinkSync(probe);
    return check('state', 'state dir', 'ok', `${dir} is writable`);
  } catch (err) {
    return check('state', 'state dir', 'fail', `${dir} is not writable: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      'run as the service user, or fix the owner/permissions of state_dir');
  }
}

/** Config `netns`: the namespace exists and can be entered; its addresses (protected like the host's). */
export async function netnsCheck(netns: string, runner: CommandRunner): Promise<{ result: CheckResult; addresses: string[] | undefined }> {
  try {
    const addresses = (await listAddresses(runner)).map((c) => c.text);
    const shown = addresses.length ? addresses.join(', ') : 'no IPv4 address';
    return { result: check('firewall', 'netns', 'ok', `rules go into network namespace ${netns} (${shown}); the checks below look inside it`), addresses };
  } catch (err) {
    return {
      result: check('firewall', 'netns', 'fail', `cannot enter network namespace ${netns}: ${errorMessage(err)}`,
        `create it (ip netns add ${netns}) or remove netns from config.json; entering a namespace needs CAP_SYS_ADMIN (see the netns note in the systemd unit)`),
      addresses: undefined,
    };
  }
}

/**
 * The agent always protects loopback, its own addresses (and the `netns`
 * namespace's) and the API's; the allowlist should name admin hosts too. An API
 * host name that does not resolve here is a warning: the agent then cannot keep
 * the API's addresses out of the blocked set.
 */
export async function allowlistCheck(config: AgentConfig, namespace?: { name: string; addresses: readonly string[] | undefined }): Promise<CheckResult> {
  const own = hostAddresses().map((c) => c.text);
  const api = await resolveApiHost(config.base_url);
  const shown = (l: readonly string[]) => (l.length > 4 ? `${l.slice(0, 4).join(', ')}, … (${l.length})` : l.join(', ') || 'none');
  const ns = namespace ? `, namespace ${namespace.name} addresses ${namespace.addresses ? shown(namespace.addresses) : 'unreadable'}` : '';
  const always = `always protected (whatever the allowlist): loopback, host addresses ${shown(own)}${ns}, API ${shown(api.addresses)}`;
  const problems: string[] = [];
  const hints: string[] = [];
  if (api.error) {
    problems.push(`the API host ${api.host} does not resolve to an IPv4 address here (${api.error}), so a feed entry could block the API`);
    hints.push(`make ${api.host} resolve on this host (getent ahostsv4 ${api.host}), or add the API's addresses to allowlist`);
  }
  if (config.allowlist.length === 0) {
    problems.push('allowlist is empty');
    hints.push('add your admin/bastion hosts and monitoring to allowlist in config.json, so a feed entry can never lock them out');
  }
  const count = `allowlist has ${config.allowlist.length} entr${config.allowlist.length === 1 ? 'y' : 'ies'}`;
  if (problems.length) return check('other', 'allowlist', 'warn', `${problems.join('; ')}; ${config.allowlist.length ? `${count}; ` : ''}${always}`, hints.join('; '));
  return check('other', 'allowlist', 'ok', `${count}; ${always}`);
}
