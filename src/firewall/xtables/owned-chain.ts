import type { Logger } from 'pino';
import { FirewallError, errorMessage } from '../../errors.js';
import { stderrMatches } from '../exec.js';
import type { CommandRunner, DropCounters, OwnedObject } from '../plugin.js';
import { XTABLES_WAIT_S, effectiveHooks, hookLine, iptablesRestore, planRemoval, readFilter, removeLeftoverBaseChains } from './filter.js';
import { parseIptablesCounters } from './rules.js';

/**
 * The agent's iptables chain and its hooks, as the ipset and iptables
 * backends both own them: removal, drop counters and the health read.
 */

/** iptables: the chain does not exist (legacy wording; iptables-nft may instead call a missing chain "incompatible"). */
const CHAIN_ABSENT = /No chain\/target\/match by that name|does not exist/i;

/**
 * Remove the chain and its hooks (and the empty base chains iptables-nft left
 * for them); rules of others are kept. Answers the rules of others that still
 * jump to the chain (it is then emptied but kept): pass them to
 * failIfReferenced once the rest of the flush is done.
 */
export async function removeOwnedChain(runner: CommandRunner, chain: string, log: Logger): Promise<string[]> {
  const filter = await readFilter(runner);
  const plan = planRemoval(filter, chain);
  await iptablesRestore(runner, plan.lines);
  const leftovers = await removeLeftoverBaseChains(runner, plan.unhooked);
  if (leftovers.length > 0) log.debug({ removed: leftovers }, 'removed empty iptables-nft base chains left by the agent’s hooks');
  return plan.foreign;
}

export function failIfReferenced(chain: string, foreign: readonly string[]): void {
  if (foreign.length > 0) {
    throw new FirewallError(
      `iptables chain ${chain} was emptied but not deleted: rules the agent did not create still jump to it: ${foreign.join('; ')}`,
    );
  }
}

async function chainExists(runner: CommandRunner, chain: string): Promise<boolean> {
  return (await readFilter(runner)).chains.has(chain);
}

/** Drop counters of the chain's DROP/REJECT rules; an absent chain counts zero. */
export async function chainCounters(runner: CommandRunner, chain: string): Promise<DropCounters> {
  try {
    const { stdout } = await runner.run('iptables', ['-w', XTABLES_WAIT_S, '-t', 'filter', '-L', chain, '-v', '-x', '-n']);
    return parseIptablesCounters(stdout);
  } catch (err) {
    if (stderrMatches(err, CHAIN_ABSENT)) return { packets: 0, bytes: 0 };
    // iptables-nft 1.8.x reports a chain missing from a missing table as "incompatible, use 'nft' tool".
    if (!(await chainExists(runner, chain).catch(() => true))) return { packets: 0, bytes: 0 };
    throw err;
  }
}

/**
 * The chain and each of its hooks (`-A HOOK -j CHAIN` in every configured built-in
 * chain that exists) as owned objects: present, absent or unreadable. A chain
 * without its hooks blocks nothing, so `status` and `doctor` must see a missing hook.
 */
export async function chainObjects(runner: CommandRunner, chain: string, hookChains: readonly string[]): Promise<OwnedObject[]> {
  const what = `iptables chain ${chain}`;
  try {
    const filter = await readFilter(runner);
    const hooks = effectiveHooks(hookChains, filter).map((h): OwnedObject => ({
      what: `iptables hook ${h} -> ${chain}`,
      state: (filter.rules.get(h) ?? []).includes(hookLine(h, chain)) ? 'present' : 'absent',
    }));
    return [{ what, state: filter.chains.has(chain) ? 'present' : 'absent' }, ...hooks];
  } catch (err) {
    return [{ what, state: 'unreadable', error: errorMessage(err) }];
  }
}
