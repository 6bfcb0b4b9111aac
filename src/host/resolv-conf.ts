import { isIPv4 } from 'node:net';

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
