import { isIPv4 } from 'node:net';
import { getPublicSuffix, parse } from 'tldts';
import { isDnsName, rpzLabelOf } from '../net/dns-name.js';

/**
 * What a URL from the feed can be blocked as. WHATWG URL parsing (the browser's own
 * rules) gives the host lower-cased, IDN turned into punycode and IPv4 in any spelling
 * (`0x7f.1`) normalised; the trailing dot of a fully qualified name is removed.
 *
 * - `name`: a DNS name that may be blocked (never a public suffix);
 * - `public_suffix`: the host is itself a public suffix (`github.io`, `co.uk`): never blocked;
 * - `ipv4`: an IPv4-literal host, for the firewall;
 * - `invalid`: no usable host (malformed, IPv6 literal, characters no DNS name has, a label
 *   response policy zones give a meaning to).
 */
export type HostOf =
  | { kind: 'name'; name: string }
  | { kind: 'public_suffix'; name: string }
  | { kind: 'ipv4'; ip: string }
  | { kind: 'invalid'; error: string };

const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** The Public Suffix List, private section included (`github.io` is a suffix, `evil.github.io` is not). */
export function isPublicSuffix(name: string): boolean {
  return getPublicSuffix(name, { allowPrivateDomains: true }) === name;
}

/**
 * A suffix the Public Suffix List itself lists (`com`, `co.uk`, `github.io`), as opposed to an
 * unknown top-level name that the list's default rule makes a suffix of its own (`lan`, `home`,
 * `localdomain`: the search domains of home routers).
 */
export function isListedPublicSuffix(name: string): boolean {
  const p = parse(name, { allowPrivateDomains: true });
  return p.publicSuffix === name && (p.isIcann === true || p.isPrivate === true);
}

/** Classify a DNS name (already lower case, no trailing dot) as a URL host would be. */
export function classifyName(host: string): HostOf {
  if (isIPv4(host)) return { kind: 'ipv4', ip: host };
  if (host.startsWith('[')) return { kind: 'invalid', error: 'IPv6 literal hosts are not enforced' };
  if (!isDnsName(host)) return { kind: 'invalid', error: 'host is not a valid DNS name' };
  // Never a name to block: a response policy zone would read it as a policy (see rpzLabelOf).
  const trigger = rpzLabelOf(host);
  if (trigger !== undefined) return { kind: 'invalid', error: `host has the label ${trigger}, which response policy zones read as a policy` };
  return isPublicSuffix(host) ? { kind: 'public_suffix', name: host } : { kind: 'name', name: host };
}

/** The hostname of a URL string (lower case, punycode, no trailing dot), or undefined. */
export function hostnameOf(raw: string): string | undefined {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 8192) return undefined;
  const text = raw.trim();
  // A feed URL without a scheme (`evil.example/login`) is read as http.
  const u = URL.parse(HAS_SCHEME.test(text) ? text : `http://${text}`);
  if (!u || !u.hostname) return undefined;
  let host = u.hostname;
  while (host.endsWith('.')) host = host.slice(0, -1);
  return host || undefined;
}

/** The host of a feed URL, classified. Never throws. */
export function hostOfUrl(raw: string): HostOf {
  const host = hostnameOf(raw);
  if (host === undefined) return { kind: 'invalid', error: 'not a URL with a host' };
  return classifyName(host);
}

/** A name given by an operator (config, `explain NAME`): a host name or a URL. */
export function normaliseName(input: string): HostOf {
  const text = input.trim();
  if (text.includes('/') || HAS_SCHEME.test(text)) return hostOfUrl(text);
  return hostOfUrl(`http://${text}/`);
}

/** `name` itself, then each parent at a label boundary (`a.b.c`, `b.c`, `c`). */
export function* selfAndParents(name: string): Generator<string> {
  let n = name;
  for (;;) {
    yield n;
    const dot = n.indexOf('.');
    if (dot < 0) return;
    n = n.slice(dot + 1);
  }
}
