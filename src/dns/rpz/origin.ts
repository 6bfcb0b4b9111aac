import { isDnsName } from '../../net/dns-name.js';

/** The zone name the documentation, install.sh and the examples use. */
export const DEFAULT_RPZ_ZONE = 'rpz.wcf';

/**
 * The name the resolver loads the RPZ zone file as (its origin), for the length check of the
 * names written into it. The zone file holds relative names, so only the resolver's own
 * configuration says; the reload command names it in the documented forms
 * (`["rndc","reload","rpz.wcf"]`, `["unbound-control","auth_zone_reload","rpz.wcf"]`): its last
 * argument when that is a DNS name. Never shorter than rpz.wcf: a guess too long only refuses
 * a name a few characters earlier, one too short would let through a name the resolver rejects
 * with the whole zone.
 */
export function rpzOriginOf(reload: readonly string[] | undefined): string {
  const last = reload && reload.length > 1 ? reload.at(-1)!.trim().toLowerCase().replace(/\.+$/, '') : '';
  return isDnsName(last) && last.length > DEFAULT_RPZ_ZONE.length ? last : DEFAULT_RPZ_ZONE;
}
