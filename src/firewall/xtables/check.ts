import { stderrMatches } from '../exec.js';
import type { CommandRunner } from '../../exec/runner.js';
import { effectiveHooks, planHooks, type FilterState } from './filter.js';

/**
 * The cheap reads behind the watcher's check for the iptables-based backends:
 * what an apply would repair in the chain and its hooks, and the set's size
 * from its header. Read-only.
 */

const NO_SUCH_SET = /does not exist/i;
const ENTRIES_LINE = /^Number of entries:\s*(\d+)\s*$/m;

/** Missing chain, altered rules, missing hooks: worded as the apply's repairs. */
export function chainCheck(filter: FilterState, chain: string, hookChains: readonly string[], rulesOk: boolean): string[] {
  const missing: string[] = [];
  if (!filter.chains.has(chain)) missing.push(`iptables chain ${chain}`);
  else if (!rulesOk) missing.push((filter.rules.get(chain) ?? []).length === 0 ? `rule in iptables chain ${chain}` : `rules of iptables chain ${chain} (differed from expected)`);
  // Only missing hooks count here: a duplicate is tidied by the next cycle and is no loss of protection.
  const hooks = planHooks(filter, chain, effectiveHooks(hookChains, filter));
  missing.push(...hooks.fixes.filter((f) => f.startsWith('hook ')));
  return missing;
}

/** Entries in an ipset set according to `ipset list -t` (the header only), or undefined when there is no such set. */
export async function setHeaderCount(runner: CommandRunner, set: string): Promise<number | undefined> {
  try {
    const { stdout } = await runner.run('ipset', ['list', '-t', set]);
    const m = ENTRIES_LINE.exec(stdout);
    return m ? Number(m[1]) : undefined;
  } catch (err) {
    if (stderrMatches(err, NO_SUCH_SET)) return undefined;
    throw err;
  }
}
