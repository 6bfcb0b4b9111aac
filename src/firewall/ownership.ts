/**
 * How the agent marks the firewall objects it creates, so that it can tell
 * them from objects someone else made under the same name (an admin's
 * `inet myfw` table, ufw's chains, a fail2ban set) and never take those over.
 *
 * - nft: the table carries `comment "wcf-agent"` (what an admin sees in
 *   `nft list ruleset`) and so does its set. The set's comment is what the
 *   agent reads back: nft 1.0.6's JSON output leaves table comments out.
 * - ipset: sets have no set-level comment, so the set is created with the
 *   `comment` extension and holds one marker element,
 *   `255.255.255.255 nomatch comment "wcf-agent"`. It can never block
 *   anything: `nomatch` excludes the address instead of matching it, and the
 *   kernel drops packets with a broadcast source as martians before any hook.
 * - iptables: the agent's chain starts with a marker rule that has no target
 *   (`-m comment --comment wcf-agent`: it only counts packets), and each hook
 *   rule carries the same comment. A chain has no comment of its own, and a
 *   marker rule keeps the per-entry rules of the iptables backend as they are.
 *
 * Objects made by earlier versions carry no marker. They are adopted (and
 * marked) once when their shape is exactly what the agent makes; anything
 * else is refused (NotOwnedError) and left byte-identical.
 */

export const OWNER_MARK = 'wcf-agent';

/**
 * The marker an agent instance writes: `wcf-agent <id>` (see agent/state/instance-id.ts), so that
 * two agents on one host tell each other's objects apart; the bare mark without one.
 */
export function ownerMark(instance: string | undefined): string {
  return instance ? `${OWNER_MARK} ${instance}` : OWNER_MARK;
}

/**
 * Whose marker `comment` is, for the agent instance `instance`: its own (or the bare mark of an
 * agent from before instance ids, adopted), another instance's, or not a marker at all. Without an
 * id of its own (a reader that cannot write the state directory) every wcf-agent marker counts as own.
 */
export function markOwner(comment: unknown, instance: string | undefined): { kind: 'own' } | { kind: 'other'; instance: string } | { kind: 'none' } {
  if (typeof comment !== 'string') return { kind: 'none' };
  if (comment === OWNER_MARK) return { kind: 'own' };
  const m = /^wcf-agent ([0-9a-f]{16})$/.exec(comment);
  if (!m) return { kind: 'none' };
  return instance === undefined || m[1] === instance ? { kind: 'own' } : { kind: 'other', instance: m[1]! };
}

/** Why an object marked by another agent instance is refused, and what to do about it. */
export function otherAgentWhy(other: string, remove: string): string {
  return (
    `it carries the marker of another wcf-agent ("${OWNER_MARK} ${other}"), so nothing of this agent's is enforced under these names: ` +
    `if that agent runs here, two agents on one host need different names (table_name, set_name, chain_name); if it does not ` +
    `(it was removed, or its marker was copied), take the names back: ${remove}, and the next cycle builds the agent's own again`
  );
}

/**
 * Why the agent's objects are refused, for people: the objects not the agent's, and the first
 * reason given (the one that names the owner; the parts of a foreign table only point to it).
 */
export function foreignSummary(objects: readonly { what: string; state: string; error?: string }[]): string | undefined {
  const foreign = objects.filter((o) => o.state === 'foreign');
  if (foreign.length === 0) return undefined;
  const first = foreign.find((o) => o.error !== undefined) ?? foreign[0]!;
  const others = foreign.length > 1 ? ` (and ${foreign.length - 1} of its parts)` : '';
  return `${first.what} is not the agent's${others}: ${first.error ?? 'it carries no wcf-agent marker'}`;
}

/** The ipset marker element's address: a broadcast source never reaches a hook. */
export const IPSET_MARK_ADDRESS = '255.255.255.255';

/** The first rule of the agent's iptables chain. */
export function markerRule(chain: string): string {
  return `-A ${chain} -m comment --comment ${OWNER_MARK}`;
}

/** Who owns an object found under one of the agent's names. */
export type Ownership =
  /** Not there: the agent may create it. */
  | { readonly kind: 'absent' }
  /** Marked (or known from the state) as the agent's own. */
  | { readonly kind: 'own' }
  /** Unmarked but exactly what an earlier version made: adopted and marked by the next apply. */
  | { readonly kind: 'legacy' }
  /** Someone else's: never written, never removed. */
  | { readonly kind: 'foreign'; readonly why: string };
