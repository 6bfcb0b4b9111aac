import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { errorMessage } from '../errors.js';
import { createRunner } from '../firewall/index.js';
import type { CommandRunner } from '../firewall/index.js';
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

/** The API host's IPv4 addresses as this host resolves them (an IPv4 literal as it is), or why there are none. */
export async function resolveApiHost(baseUrl: string): Promise<{ host: string; addresses: string[]; error?: string }> {
  const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
  if (isIPv4(host)) return { host, addresses: [host] };
  try {
    const found = await lookup(host, { all: true, family: 4 });
    return { host, addresses: found.map((f) => f.address), ...(found.length ? {} : { error: 'no IPv4 address' }) };
  } catch (err) {
    return { host, addresses: [], error: (err as NodeJS.ErrnoException).code ?? errorMessage(err) };
  }
}

/**
 * The API server's addresses: blocking them would cut the agent off from the
 * very service that could undo the block. A failed lookup is logged, not fatal
 * (the pull itself will report the outage).
 */
export async function apiAddresses(baseUrl: string, logger: Logger): Promise<Cidr[]> {
  const r = await resolveApiHost(baseUrl);
  if (r.error) logger.debug({ host: r.host, err: r.error }, 'could not resolve the API host for the protected list');
  return r.addresses.map((a) => mustParseCidr(a, 'base_url'));
}

/**
 * The IPv4 addresses `ip -j -4 addr show` lists: where `runner` runs it, or in
 * network namespace `netns` (`ip -n`, one process). Throws when the command
 * fails (a namespace that is missing or cannot be entered).
 */
export async function listAddresses(runner: CommandRunner, netns?: string): Promise<Cidr[]> {
  const { stdout } = await runner.run('ip', ['-j', '-4', ...(netns ? ['-n', netns] : []), 'addr', 'show']);
  const links = JSON.parse(stdout) as { addr_info?: { local?: string }[] }[];
  return links.flatMap((l) => (l.addr_info ?? []).map((a) => parseCidr(a.local ?? ''))).flatMap((r) => (r.ok ? [r.cidr] : []));
}

/** The IPv4 addresses inside a network namespace (when `netns` is set, those are the host being protected). */
export async function namespaceAddresses(netns: string, logger: Logger): Promise<Cidr[]> {
  try {
    return await listAddresses(createRunner(), netns);
  } catch (err) {
    logger.warn({ netns }, `could not read the addresses of network namespace ${netns}: ${errorMessage(err)}`);
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
