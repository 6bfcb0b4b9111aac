import type { Logger } from '../../log.js';
import type { ProtectedMember, ProtectedSet } from '../../policy/protect.js';
import type { AgentConfig } from '../../config/load.js';
import { computeProtectedSet, type LastKnownApi, type ProtectedOptions } from '../../host/protected-set.js';
import type { AppliedSet, StateStore } from '../state/store.js';

type AppliedEntry = AppliedSet['entries'][number];

/** Entries of an applied set that have not expired by `now`. */
export function liveEntries(set: AppliedSet | undefined, now: number): AppliedSet['entries'] {
  return (set?.entries ?? []).filter((e) => e.expiresAt === null || e.expiresAt > now);
}

export function logRemoved(logger: Logger, removed: readonly { entry: AppliedEntry; member: ProtectedMember }[], why: string): void {
  for (const { entry, member } of removed) {
    logger.warn(
      { cidr: entry.cidr, protectedBy: member.cidr.text, source: member.source, ...(member.detail ? { detail: member.detail } : {}) },
      `${why}: ${entry.cidr} is protected (${member.source} ${member.cidr.text}) and is removed from the firewall`,
    );
  }
}

/** Keeps the API's resolved addresses in state for when resolution fails; written only when they change. */
export function rememberApiIn(state: StateStore): (known: LastKnownApi) => void {
  return (known) => {
    const old = state.small.apiLastKnown;
    if (old && old.host === known.host && old.addresses.join() === known.addresses.join()) return;
    state.update({ apiLastKnown: known });
  };
}

/** The protected set from config.json, the host and the state alone (no API call). */
export function localProtectedSet(config: AgentConfig, state: Pick<StateStore, 'small'>, logger: Logger, extra: Partial<ProtectedOptions> = {}): Promise<ProtectedSet> {
  return computeProtectedSet({ config, logger, lastKnownApi: state.small.apiLastKnown, ...extra });
}
