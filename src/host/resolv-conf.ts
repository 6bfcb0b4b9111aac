import { isIPv4 } from 'node:net';
import { isDnsName } from '../net/dns-name.js';

/**
 * The IPv4 name servers a resolv.conf names (`nameserver A` lines, in order,
 * without duplicates). Comments (`#`, `;`), other keywords, IPv6 servers and
 * anything that is not a strict dotted quad are ignored: the text comes from
 * the host, and a line it cannot read must not stop the agent.
 */
export function parseResolvConf(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const m = /^nameserver\s+(\S+)$/.exec(line);
    if (!m) continue;
    // glibc accepts a trailing %scope on IPv6 only; an IPv4 server is the bare address.
    const addr = m[1]!;
    if (isIPv4(addr) && !out.includes(addr)) out.push(addr);
  }
  return out;
}

/**
 * The search domains a resolv.conf names (`search A B ...` and `domain A` lines), lower case,
 * without the trailing dot, in order, without duplicates. Every such line is taken, not only the
 * last as the C library does: a name kept too many costs nothing, one missed is a host's own
 * names blocked. What is no DNS name (the root `.`, garbage) is skipped.
 */
export function parseSearchDomains(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const words = raw.replace(/[#;].*$/, '').trim().split(/\s+/);
    if (words[0] !== 'search' && words[0] !== 'domain') continue;
    for (const w of words.slice(1)) {
      const name = w.toLowerCase().replace(/\.+$/, '');
      if (isDnsName(name) && !out.includes(name)) out.push(name);
    }
  }
  return out;
}
