import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { execa } from 'execa';
import type { Logger } from '../log.js';
import { mustParseCidr, parseCidr, type Cidr } from '../net/ipv4.js';

/** The host's own IPv4 addresses (all interfaces), as /32s. */
export function hostAddresses(): Cidr[] {
  const out: Cidr[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family !== 'IPv4') continue;
      const r = parseCidr(a.address);
      if (r.ok) out.push(r.cidr);
    }
  }
  return out;
}

/**
 * The API server's addresses: blocking them would cut the agent off from the
 * very service that could undo the block. A failed lookup is logged, not fatal
 * (the pull itself will report the outage).
 */
export async function apiAddresses(baseUrl: string, logger: Logger): Promise<Cidr[]> {
  const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  if (isIPv4(host)) return [mustParseCidr(host, 'base_url')];
  try {
    const found = await lookup(host, { all: true, family: 4 });
    return found.map((f) => mustParseCidr(f.address, 'base_url'));
  } catch (err) {
    logger.debug({ host, err: (err as Error).message }, 'could not resolve the API host for the protected list');
    return [];
  }
}

/** The IPv4 addresses inside a network namespace (when `netns` is set, those are the host being protected). */
export async function namespaceAddresses(netns: string, logger: Logger): Promise<Cidr[]> {
  try {
    const { stdout } = await execa('ip', ['-j', '-4', '-n', netns, 'addr', 'show']);
    const links = JSON.parse(stdout) as { addr_info?: { local?: string }[] }[];
    return links.flatMap((l) => (l.addr_info ?? []).map((a) => parseCidr(a.local ?? ''))).flatMap((r) => (r.ok ? [r.cidr] : []));
  } catch (err) {
    logger.warn({ netns }, `could not read the addresses of network namespace ${netns}: ${(err as Error).message}`);
    return [];
  }
}

/** Everything rule 1 of the selection protects besides the built-in ranges. */
export async function protectedNetworks(allowlist: readonly string[], baseUrl: string, logger: Logger, netns?: string): Promise<Cidr[]> {
  return [
    ...allowlist.map((a, i) => mustParseCidr(a, `allowlist.${i}`)),
    ...hostAddresses(),
    ...(netns ? await namespaceAddresses(netns, logger) : []),
    ...(await apiAddresses(baseUrl, logger)),
  ];
}
