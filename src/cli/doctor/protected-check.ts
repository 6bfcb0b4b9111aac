import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeProtectedMembers, type LastKnownApi } from '../../host/protected-set.js';
import type { AgentConfig } from '../../config/load.js';
import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { toCidr } from '../../net/ipv4.js';
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
export async function protectedSetCheck(config: AgentConfig, logger: Logger, kernel: () => Promise<string[]> | undefined): Promise<CheckResult> {
  const members = await computeProtectedMembers({ config, logger, lastKnownApi: lastKnownApi(config.state_dir) });
  const lines = members.map(memberLine);
  const head = `${members.length} members, never blocked:`;
  let held: string;
  let inKernel: { entry: string; member: ProtectedMember }[] = [];
  try {
    const listed = await kernel();
    if (listed === undefined) held = 'kernel set not read';
    else {
      inKernel = filterProtected(listed, new ProtectedSet(members), (e) => toCidr(e)).removed;
      held = `the kernel set (${listed.length} entries) holds none of them`;
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
