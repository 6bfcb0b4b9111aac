import type { Logger } from 'pino';
import { FirewallError } from '../../errors.js';
import { hitsSetName, type Side } from '../direction.js';
import { stderrMatches } from '../exec.js';
import type { CommandRunner } from '../../exec/runner.js';
import { ipsetNames, setOwnership } from './ownership.js';
import { parseIpsetSave } from './text.js';

/** Removing the agent's ipset sets (flush, a side given up, a failed rebuild's temp set). */

export const NO_SUCH_SET = /does not exist/i;
const SET_IN_USE = /in use/i;

/** Destroy a set; retry briefly while the kernel still holds a reference from a just-deleted rule. */
export async function destroySet(runner: CommandRunner, set: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await runner.run('ipset', ['destroy', set]);
      return;
    } catch (err) {
      if (stderrMatches(err, NO_SUCH_SET)) return;
      if (stderrMatches(err, SET_IN_USE)) {
        if (attempt < 20) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        throw FirewallError.rewrap(err, `ipset set ${set} is still used by a rule the agent did not create; remove that rule, then flush again`);
      }
      throw err;
    }
  }
}

/** Destroy a set if it is there and nothing uses it; never fails. */
export async function destroySetQuietly(runner: CommandRunner, set: string): Promise<void> {
  try {
    await runner.run('ipset', ['destroy', set]);
  } catch {
    // absent or in use: nothing to clean up, or nothing we may touch
  }
}

/**
 * Destroy the agent's set, its temp set and its hits sets (after the chain
 * that names them is gone); a set under those names that is not the agent's
 * is left as it is, with a warning. Returns what was removed.
 */
export async function removeOwnedSets(runner: CommandRunner, setName: string, tempName: string, log: Logger, instance?: string): Promise<string[]> {
  const names = await ipsetNames(runner);
  const removed: string[] = [];
  // The hits sets carry no marker of their own (a marker element would count as a hit): they are
  // the agent's when its main set is, or when that set is gone (a flush that stopped half-way).
  const hits = (['in', 'out'] as const).map((side: Side) => hitsSetName(setName, side));
  let mainIsOurs = true;
  for (const set of [setName, tempName]) {
    if (!names.has(set)) continue;
    const owner = setOwnership(parseIpsetSave((await runner.run('ipset', ['save', set])).stdout, set), instance, setName);
    if (owner.kind === 'foreign') {
      log.warn({ set }, `ipset set ${set} is not the agent's (${owner.why}); left as it is`);
      if (set === setName) mainIsOurs = false;
      continue;
    }
    await destroySet(runner, set);
    removed.push(`ipset set ${set}`);
  }
  for (const set of hits) {
    if (!mainIsOurs || !names.has(set)) continue;
    await destroySet(runner, set);
    removed.push(`ipset set ${set}`);
  }
  return removed;
}
