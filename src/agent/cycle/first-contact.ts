import { AgentUnknownError } from '../../errors.js';
import type { SmallState, StateStore } from '../state/store.js';

/**
 * "Not found" for the agent's record means two different things. An agent that has seen
 * its record before lost it (an administrator deleted it): it keeps its last known
 * configuration and stops reporting. An agent that never saw one is most likely configured
 * with a mistyped `agid`: running on local defaults and never reporting would hide that, so
 * it is a configuration error until the record is found once.
 */
interface FirstContactState {
  /** Epoch s the agent first found its record on the server. */
  agentRecordSeenAt?: number;
}

/** Whether this agent has found its record on the server before. */
export function agentRecordSeen(state: Pick<StateStore, 'small'>): boolean {
  const s = state.small as SmallState & FirstContactState;
  if (s.agentRecordSeenAt !== undefined) return true;
  // State written before the mark existed: settings taken from the server prove a record was there.
  return s.sources !== undefined && Object.values(s.sources).includes('server');
}

/** Throws AgentUnknownError when the record is missing and was never seen. */
export function checkAgentRecord(found: boolean, state: Pick<StateStore, 'small'>, agid: string): void {
  if (!found && !agentRecordSeen(state)) throw new AgentUnknownError(agid);
}

/** State patch remembering that the record was found (added to a cycle's state write; empty once known). */
export function seenPatch(found: boolean, state: Pick<StateStore, 'small'>, now: number): Partial<SmallState> {
  if (!found || (state.small as FirstContactState).agentRecordSeenAt !== undefined) return {};
  const patch: Partial<SmallState> & FirstContactState = { agentRecordSeenAt: now };
  return patch;
}
