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
