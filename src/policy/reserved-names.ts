/**
 * Names that are never blocked at the resolver, whatever a feed says: none of them is a place on
 * the internet a threat lives at, and blocking one breaks the host itself.
 *
 * The reverse zones: every PTR lookup of an address is a name under them (`3.2.1.10.in-addr.arpa`
 * for 10.1.2.3). A feed listing `10.in-addr.arpa` would make every reverse lookup of the host's own
 * networks fail: the names in logs, `ssh`'s UseDNS, a mail server's checks.
 */
export const REVERSE_ZONES: readonly string[] = ['in-addr.arpa', 'ip6.arpa'];

/**
 * Special-use names, answered on the local network or nowhere, never by the public DNS:
 * `localhost`, `invalid` and `test` (RFC 6761), `local` (multicast DNS, RFC 6762), `home.arpa`
 * (home networks, RFC 8375), `onion` (Tor, RFC 7686), `alt` (other name systems, RFC 9476) and
 * `internal` (private networks, reserved by ICANN in 2024; the cloud providers' own names such as
 * `ec2.internal` and `c.PROJECT.internal` live there).
 */
export const SPECIAL_USE_NAMES: readonly string[] = ['localhost', 'local', 'invalid', 'test', 'home.arpa', 'internal', 'onion', 'alt'];
