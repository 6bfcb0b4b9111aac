import { hitsSetName, sides, type Direction } from '../direction.js';
import { stderrMatches } from '../exec.js';
import type { Repairs } from '../kernel-plugin.js';
import type { CommandRunner, HitCounter } from '../plugin.js';
import { hitsSetCreateArgs, parseIpsetHits } from './text.js';

/**
 * The ipset backend's hits sets (`<set>-in`, `<set>-out`): created when the
 * chain's rules are (re)written, read for `hits` and the metrics.
 */

const NO_SUCH_SET = /does not exist/i;

/**
 * Make the hits sets of the sides in use exist (empty when new: the rules
 * about to be written name them). `existing`: the ipset names now. Returns
 * the agent's hits sets for sides no longer used, to destroy once no rule
 * names them.
 */
export async function ensureHitsSets(runner: CommandRunner, setName: string, direction: Direction, existing: ReadonlySet<string>, repairs: Repairs): Promise<string[]> {
  const used = sides(direction);
  for (const side of used) {
    const name = hitsSetName(setName, side);
    if (existing.has(name)) continue;
    repairs.note(`ipset set ${name}`);
    await runner.run('ipset', hitsSetCreateArgs(name));
  }
  return (['in', 'out'] as const).filter((s) => !used.includes(s)).map((s) => hitsSetName(setName, s)).filter((n) => existing.has(n));
}

/** The addresses hit on each side in use, with their counters; a missing hits set has none. */
export async function readIpsetHits(runner: CommandRunner, setName: string, direction: Direction): Promise<HitCounter[]> {
  const out: HitCounter[] = [];
  for (const side of sides(direction)) {
    try {
      out.push(...parseIpsetHits((await runner.run('ipset', ['save', hitsSetName(setName, side)])).stdout, side));
    } catch (err) {
      if (!stderrMatches(err, NO_SUCH_SET)) throw err;
    }
  }
  return out;
}
