import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeProtectedMembers, type LastKnownApi } from '../../host/protected-set.js';
import type { AgentConfig } from '../../config/load.js';
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { toCidr, type Cidr } from '../../net/ipv4.js';
import type { FirewallPlugin } from '../../firewall/index.js';
import { ProtectedSet, filterProtected, type ProtectedMember } from '../../policy/protect.js';
import { check, type CheckResult } from './check.js';

/** The API's last known addresses from state.json, read without opening the store (doctor writes nothing). */
function lastKnownApi(stateDir: string): LastKnownApi | undefined {
  try {
    const s = JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8')) as { apiLastKnown?: LastKnownApi };
    const k = s.apiLastKnown;
    return k && typeof k.host === 'string' && Array.isArray(k.addresses) ? k : undefined;
  } catch {
    return undefined;
  }
}

export function memberLine(m: ProtectedMember): string {
  return `${m.source.padEnd(21)} ${m.cidr.text}${m.detail ? ` (${m.detail})` : ''}`;
}

/**
 * Every member of the protected set with its source, as the agent computes it
 * at a cycle; a warning when the kernel set (`kernel`, read through the
 * plugin's list()) holds one of them (an entry applied before the address
 * became protected, which the next cycle removes).
 */
/**
 * The kernel entries that may hold protected addresses: the whole set where it lists quickly,
 * else (FirewallPlugin.lookup) only what overlaps each member. Members wider than a /24
 * (loopback, link-local, multicast, reserved ranges: protected from the start, so never
 * written) are looked up among the networks only.
 */
export async function kernelProtected(plugin: FirewallPlugin, members: readonly Cidr[]): Promise<{ entries: string[]; whole: boolean }> {
  if (!plugin.lookup) return { entries: await plugin.list(), whole: true };
  const entries = new Set<string>();
  for (const m of members) for (const e of await plugin.lookup(m, m.prefix >= 24 ? undefined : [])) entries.add(e.cidr);
  return { entries: [...entries], whole: false };
}

export async function protectedSetCheck(config: AgentConfig, logger: Logger, kernel: (members: readonly Cidr[]) => Promise<{ entries: string[]; whole: boolean }> | undefined): Promise<CheckResult> {
  const members = await computeProtectedMembers({ config, logger, lastKnownApi: lastKnownApi(config.state_dir) });
  const lines = members.map(memberLine);
  const head = `${members.length} members, never blocked:`;
  let held: string;
  let inKernel: { entry: string; member: ProtectedMember }[] = [];
  try {
    const read = await kernel(members.map((m) => m.cidr));
    if (read === undefined) held = 'kernel set not read';
    else {
      inKernel = filterProtected(read.entries, new ProtectedSet(members), (e) => toCidr(e)).removed;
      held = read.whole ? `the kernel set (${read.entries.length} entries) holds none of them` : 'the kernel set holds none of them (looked up member by member)';
    }
  } catch (err) {
    held = `kernel set unreadable: ${errorMessage(err)}`;
  }
  if (inKernel.length) {
    const found = inKernel.map((r) => `${r.entry} (${r.member.source} ${r.member.cidr.text})`).join(', ');
    return check('other', 'protected set', 'warn', `the kernel set holds protected addresses: ${found}\n${head}\n${lines.join('\n')}`,
      'the next sync removes them (also when its pull fails); or run wcf-agent sync --once now');
  }
  return check('other', 'protected set', 'ok', `${held}; ${head}\n${lines.join('\n')}`);
}
