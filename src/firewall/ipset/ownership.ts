import { errorMessage, FirewallError } from '../../errors.js';
import { markOwner, otherAgentWhy, type Ownership } from '../ownership.js';
import type { OwnedObject } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import type { IpsetSaveParsed } from './text.js';

/** Who owns the set under the agent's set name (see ../ownership.ts for the marker). */

/**
 * Whose set this is (see ownership.ts): marked, or exactly what an earlier
 * version made (hash:net, family inet, per-entry timeouts, plain entries only).
 */
export function setOwnership(current: IpsetSaveParsed | undefined, instance?: string, setName = 'wcf-blocklist'): Ownership {
  if (current === undefined) return { kind: 'absent' };
  const owner = markOwner(current.mark, instance);
  if (owner.kind === 'other') return { kind: 'foreign', why: otherAgentWhy(owner.instance, `ipset destroy ${setName}, after removing its iptables chain`) };
  if (current.marked) return { kind: 'own' };
  const family = current.createOptions.get('family') ?? 'inet';
  if (current.type === 'hash:net' && family === 'inet' && current.createOptions.get('timeout') === '0' && current.odd === 0) return { kind: 'legacy' };
  return {
    kind: 'foreign',
    why: `type ${current.type ?? '?'} family ${family}${current.createOptions.has('timeout') ? '' : ' without timeouts'}${current.odd ? `, ${current.odd} entries with options the agent never sets` : ''}, and no wcf-agent marker element`,
  };
}

/** The names of every ipset set now (`ipset list -n`). */
export async function ipsetNames(runner: CommandRunner): Promise<Set<string>> {
  return new Set((await runner.run('ipset', ['list', '-n'])).stdout.split('\n').map((l) => l.trim()).filter(Boolean));
}

/**
 * The set as an owned object. Judged from its header only (`ipset list -t`: no
 * members, cheap at a million entries): a set of another type or without
 * timeouts is foreign; the marker element itself is checked by apply.
 * `names`: ipsetNames, read once by the caller.
 */
async function setObject(runner: CommandRunner, setName: string, names: ReadonlySet<string>): Promise<OwnedObject> {
  const what = `ipset ${setName}`;
  if (!names.has(setName)) return { what, state: 'absent' };
  try {
    const header = (await runner.run('ipset', ['list', '-t', setName])).stdout;
    const agentShaped = /^Type: hash:net$/m.test(header) && /^Header: family inet .* timeout 0( |$)/m.test(header);
    return agentShaped ? { what, state: 'present' } : { what, state: 'foreign', error: 'not a hash:net set with timeouts, as the agent makes' };
  } catch (err) {
    return { what, state: 'unreadable', error: errorMessage(err) };
  }
}

/**
 * The set, then its hits sets `hits` (the agent's only alongside its own set:
 * they carry no marker of their own), from one `ipset list -n`.
 */
export async function setObjects(runner: CommandRunner, setName: string, hits: readonly string[]): Promise<OwnedObject[]> {
  let names: ReadonlySet<string>;
  try {
    names = await ipsetNames(runner);
  } catch (err) {
    return [setName, ...hits].map((name): OwnedObject => ({ what: `ipset ${name}`, state: 'unreadable', error: errorMessage(err) }));
  }
  const set = await setObject(runner, setName, names);
  if (set.state === 'foreign') return [set];
  return [set, ...hits.map((name): OwnedObject => ({ what: `ipset ${name}`, state: names.has(name) ? 'present' : 'absent' }))];
}

/** The agent's own set must be hash:net family inet: ipset swaps only sets of one type and family, and the set is in use by the agent's rule, so another shape is the operator's to remove. */
export function checkSetType(current: IpsetSaveParsed, setName: string): void {
  const family = current.createOptions.get('family') ?? 'inet';
  if (current.type !== 'hash:net' || family !== 'inet') {
    throw new FirewallError(
      `ipset set ${setName} exists with type ${current.type ?? '?'} family ${family}, expected hash:net family inet; ` +
        `remove it (ipset destroy ${setName}, after removing rules that use it) or choose another set_name`,
    );
  }
}
