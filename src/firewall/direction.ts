/**
 * Which traffic the agent blocks. `inbound` matches the source address of
 * packets arriving or forwarded; `outbound` the destination of packets the
 * host sends or forwards (a local process reaching a listed host); `both`
 * does both with the one set of entries.
 */
export type Direction = 'both' | 'inbound' | 'outbound';

/** One side of the traffic, as counters and the `hits` command name it. */
export type Side = 'in' | 'out';

export const DIRECTIONS: readonly Direction[] = ['both', 'inbound', 'outbound'];

/** The sides a direction matches, inbound first. */
export function sides(direction: Direction): Side[] {
  if (direction === 'inbound') return ['in'];
  if (direction === 'outbound') return ['out'];
  return ['in', 'out'];
}

/**
 * iptables-style hook chains for a direction: the configured ones, plus
 * OUTPUT when outbound traffic is matched (locally generated packets pass no
 * other chain), minus INPUT when only outbound is (no rule there would ever
 * match). FORWARD (and DOCKER-USER) serve both sides.
 */
export function directionHooks(hookChains: readonly string[], direction: Direction): string[] {
  const out = hookChains.filter((h) => !(direction === 'outbound' && h === 'INPUT'));
  if (direction !== 'inbound' && !out.includes('OUTPUT')) out.push('OUTPUT');
  return out;
}

/** Name of the small set that records the addresses hit on one side (`<set>-in`, `<set>-out`: fits ipset's 31 characters). */
export function hitsSetName(setName: string, side: Side): string {
  return `${setName}-${side}`;
}
