import { hitsSetName, sides, type Direction } from '../direction.js';
import { stderrMatches } from '../exec.js';
import type { HitCounter } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import { NO_SUCH_SET } from './remove.js';
import { parseIpsetHits, renderHitsSetCreate } from './text.js';

/**
 * The ipset backend's hits sets (`<set>-in`, `<set>-out`): created when the
 * chain's rules are (re)written, read for `hits` and the metrics.
 */

/**
 * `ipset restore` lines that make the hits sets of the sides in use exist
 * (empty when new: the rules about to be written name them); run in the same
 * process as the set's own script when there is one.
 */
export function hitsSetLines(setName: string, direction: Direction): string[] {
  return usedHitsSets(setName, direction).map(renderHitsSetCreate);
}

/** The hits sets of the sides not in use: destroyed (when present) once no rule names them. */
export function unusedHitsSets(setName: string, direction: Direction): string[] {
  const used = sides(direction);
  return (['in', 'out'] as const).filter((s) => !used.includes(s)).map((s) => hitsSetName(setName, s));
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

/** The hits sets of the sides in use. */
export function usedHitsSets(setName: string, direction: Direction): string[] {
  return sides(direction).map((side) => hitsSetName(setName, side));
}
