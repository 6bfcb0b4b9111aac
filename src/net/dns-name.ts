/** Letters, digits, `-` and `_` (service labels), 1..63 per label, no leading/trailing `-`. */
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * A host name safe to write into a resolver's configuration: WHATWG allows characters
 * such as `"`, `*` or `;` in a host, which must never reach unbound.conf or a zone file.
 *
 * Apart from host.ts so that checking the configuration does not load the public suffix
 * list (tldts, about 2 MB resident), which only the URL feed needs.
 */
export function isDnsName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  for (const label of name.split('.')) if (!LABEL.test(label)) return false;
  return true;
}

/**
 * The first label that response policy zones give a meaning to, if any. RPZ reads names
 * ending in `rpz-ip`, `rpz-nsip`, `rpz-nsdname` or `rpz-client-ip` as triggers on addresses,
 * name servers and clients (`32.1.0.0.127.rpz-client-ip` would cut every query from the host
 * off), and `rpz-drop`, `rpz-passthru`, `rpz-tcp-only` as actions. Any label starting with
 * `rpz-` is taken as one: the prefix is the format's, and no real site needs it blocked.
 */
export function rpzLabelOf(name: string): string | undefined {
  // Every feed URL's host passes here: most have no `rpz-` at all, and need no split.
  if (!name.includes('rpz-')) return undefined;
  for (const label of name.split('.')) if (label.startsWith('rpz-')) return label;
  return undefined;
}

/** DNS's limit on a whole name, in wire format (each label with its length octet, plus the root). */
export const MAX_NAME_OCTETS = 255;

/** Octets of a name (text without the trailing dot) in wire format. */
export function wireOctets(name: string): number {
  return name.length === 0 ? 1 : name.length + 2;
}

/**
 * Why `name` must not be given to a resolver as a block, or undefined when it may. With
 * `rpzOrigin` (the zone's name as the resolver loads it), the longest owner name the zone
 * gets for it, `*.NAME.ORIGIN.`, must fit DNS's 255 octets: one name past it makes the
 * resolver refuse the whole zone. The reason names the label or the length, never more
 * than the name itself.
 */
export function blockRefusal(name: string, rpzOrigin?: string): string | undefined {
  if (!isDnsName(name)) return 'not a valid DNS name';
  const trigger = rpzLabelOf(name);
  if (trigger !== undefined) return `has the label ${trigger}, which response policy zones read as a policy`;
  if (rpzOrigin !== undefined) {
    const octets = wireOctets(`*.${name}.${rpzOrigin}`);
    if (octets > MAX_NAME_OCTETS) return `too long for the response policy zone (*.NAME.${rpzOrigin}. would be ${octets} octets; DNS allows ${MAX_NAME_OCTETS})`;
  }
  return undefined;
}
