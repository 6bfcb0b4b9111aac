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
