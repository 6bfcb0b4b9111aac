import type { Logger } from 'pino';
import { FirewallError, errorMessage } from '../../errors.js';
import { stderrMatches } from '../exec.js';
import { markerRule, type Ownership } from '../ownership.js';
import type { DropCounters, OwnedObject } from '../plugin.js';
import type { CommandRunner } from '../../exec/runner.js';
import { XTABLES_WAIT_S, anyMarkedHook, hookLine, legacyHookLine, iptablesRestore, planRemoval, readFilter, removeLeftoverBaseChains, type FilterState } from './filter.js';
import { parseIptablesCounters } from './rules.js';

/**
 * The agent's iptables chain and its hooks, as the ipset and iptables
 * backends both own them: removal, drop counters and the health read.
 */

/** iptables: the chain does not exist (legacy wording; iptables-nft may instead call a missing chain "incompatible"). */
const CHAIN_ABSENT = /No chain\/target\/match by that name|does not exist/i;

/** What an earlier, unmarking version would have put in the chain (its rules without the marker). */
export type LegacyShape = (rules: readonly string[]) => boolean;

/**
 * Whose chain `chain` is (see ownership.ts). The agent's chain starts with the
 * marker rule. An empty chain is the agent's when a marked hook jumps to it or
 * the agent applied with this backend before (`iptables -F` empties every
 * chain, the agent's too, and must be repaired, not refused). Unmarked rules
 * exactly as an earlier version wrote them are adopted.
 */
export function chainOwnership(filter: FilterState, chain: string, legacy: LegacyShape, appliedBefore: boolean): Ownership {
  if (!filter.chains.has(chain)) return { kind: 'absent' };
  const rules = filter.rules.get(chain) ?? [];
  if (rules[0] === markerRule(chain)) return { kind: 'own' };
  if (rules.length === 0) {
    return appliedBefore || anyMarkedHook(filter, chain) ? { kind: 'own' } : { kind: 'foreign', why: 'an empty chain without the wcf-agent marker rule' };
  }
  if (legacy(rules)) return { kind: 'legacy' };
  return { kind: 'foreign', why: `its ${rules.length} rule(s) do not start with the wcf-agent marker rule and are not the rules the agent makes` };
}

/**
 * Remove the chain and its hooks (and the empty base chains iptables-nft left
 * for them); rules of others are kept. A chain that is not the agent's is left
 * as it is, with a warning naming it (the answer is then undefined). Answers
 * the rules of others that still jump to the chain (it is then emptied but
 * kept): pass them to failIfReferenced once the rest of the flush is done.
 */
export async function removeOwnedChain(runner: CommandRunner, chain: string, log: Logger, legacy: LegacyShape): Promise<string[] | undefined> {
  const filter = await readFilter(runner);
  const owner = chainOwnership(filter, chain, legacy, false);
  if (owner.kind === 'foreign') {
    log.warn({ chain }, `iptables chain ${chain} is not the agent's (${owner.why}); left as it is, with whatever jumps to it`);
    return undefined;
  }
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

/** The chain and each wanted hook as owned objects (read-only), from one read of the filter table. */
export async function chainObjects(runner: CommandRunner, chain: string, hooks: (filter: FilterState) => readonly string[], legacy: LegacyShape): Promise<OwnedObject[]> {
  const what = `iptables chain ${chain}`;
  let filter: FilterState;
  try {
    filter = await readFilter(runner);
  } catch (err) {
    return [{ what, state: 'unreadable', error: errorMessage(err) }];
  }
  const owner = chainOwnership(filter, chain, legacy, true);
  if (owner.kind === 'foreign') return [{ what, state: 'foreign', error: owner.why }];
  const out: OwnedObject[] = [{ what, state: owner.kind === 'absent' ? 'absent' : 'present' }];
  for (const h of hooks(filter)) {
    const rules = filter.rules.get(h) ?? [];
    const hooked = rules.includes(hookLine(h, chain)) || rules.includes(legacyHookLine(h, chain));
    out.push({ what: `iptables hook ${h} -> ${chain}`, state: hooked && owner.kind !== 'absent' ? 'present' : 'absent' });
  }
  return out;
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
