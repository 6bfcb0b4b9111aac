import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { AgentConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import { createRunner } from '../firewall/index.js';
import type { CommandRunner } from '../exec/runner.js';
import type { Logger } from '../log.js';
import { mustParseCidr, parseCidr, type Cidr } from '../net/ipv4.js';
import { BUILT_IN_PROTECTED, ProtectedSet, type ProtectedMember, type ProtectedSource } from '../policy/protect.js';
import { DEFAULT_HOST_PATHS, proxyHosts, readGateways, readResolvers, readSshSessions, resolveHostname, type HostPaths } from './facts.js';

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
  return { host, ...(await resolveHostname(host)) };
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

/** The API server's addresses last resolved, kept in state for when resolution fails. */
export interface LastKnownApi {
  host: string;
  addresses: string[];
  at: number;
}

export interface ProtectedOptions {
  config: Pick<AgentConfig, 'allowlist' | 'base_url' | 'proxy' | 'netns' | 'protect_ssh_sessions'>;
  logger: Logger;
  /** The API's addresses from an earlier resolution (state). */
  lastKnownApi?: LastKnownApi | undefined;
  /** Told the API's addresses when they resolve (the cycle persists them; `plan` and `doctor` write nothing). */
  rememberApi?: (known: LastKnownApi) => void;
  /**
   * No DNS lookups (the start-up restore runs before any network call): the API is protected by its
   * last known addresses, and a proxy only when it is named by address.
   */
  offline?: boolean;
  paths?: Partial<HostPaths>;
  env?: NodeJS.ProcessEnv;
  runner?: CommandRunner;
}

/**
 * Everything the agent must never block, each member with its source,
 * computed from config.json and the host alone (no API call): a pull that
 * fails and a start-up restore get the same set as a cycle. A source that
 * cannot be read is logged and left out; the others still count. Only a bad
 * allowlist entry throws (config.json was validated, so that is a bug).
 */
export async function computeProtectedMembers(o: ProtectedOptions): Promise<ProtectedMember[]> {
  const { config, logger } = o;
  const paths = { ...DEFAULT_HOST_PATHS, ...o.paths };
  const runner = o.runner ?? createRunner();
  const out: ProtectedMember[] = [...BUILT_IN_PROTECTED];
  const add = (address: string, source: ProtectedSource, detail?: string) => {
    const r = parseCidr(address);
    if (r.ok) out.push({ cidr: r.cidr, source, ...(detail ? { detail } : {}) });
  };
  const soft = async (what: string, f: () => Promise<void> | void) => {
    try {
      await f();
    } catch (err) {
      logger.warn(`protected set: could not read ${what}: ${errorMessage(err)}`);
    }
  };

  config.allowlist.forEach((a, i) => out.push({ cidr: mustParseCidr(a, `allowlist.${i}`), source: 'allowlist' }));
  for (const c of hostAddresses()) out.push({ cidr: c, source: 'own_address' });

  // Independent lookups (a process, DNS), run together.
  const tasks: Promise<void>[] = [];
  if (config.netns) {
    const ns = config.netns;
    tasks.push(soft(`the addresses of network namespace ${ns}`, async () => {
      for (const c of await listAddresses(runner, ns)) out.push({ cidr: c, source: 'own_address', detail: `netns ${ns}` });
    }));
  }
  tasks.push(soft('the default gateways', async () => {
    for (const g of await readGateways(runner, paths, config.netns)) add(g, 'gateway', config.netns ? `netns ${config.netns}` : undefined);
  }));
  tasks.push(soft('the API server address', async () => {
    const host = new URL(config.base_url).hostname.replace(/^\[|\]$/g, '');
    const api = o.offline && !isIPv4(host) ? { host, addresses: [], error: 'not resolved (offline)' } : await resolveApiHost(config.base_url);
    if (!api.error) {
      for (const a of api.addresses) add(a, 'api_server', a === api.host ? undefined : api.host);
      o.rememberApi?.({ host: api.host, addresses: api.addresses, at: Math.floor(Date.now() / 1000) });
      return;
    }
    const last = o.lastKnownApi?.host === api.host ? o.lastKnownApi.addresses : [];
    logger.debug({ host: api.host, err: api.error, lastKnown: last }, 'could not resolve the API host; protecting its last known addresses');
    for (const a of last) add(a, 'api_server_last_known', api.host);
  }));
  for (const p of proxyHosts(config.proxy, o.env ?? process.env)) {
    tasks.push(soft(`the proxy address (${p.detail})`, async () => {
      if (o.offline && !isIPv4(p.host)) return;
      const r = await resolveHostname(p.host);
      if (r.error) throw new Error(`${p.host}: ${r.error}`);
      for (const a of r.addresses) add(a, 'proxy', p.detail);
    }));
  }
  await Promise.all(tasks);

  await soft('the resolvers', () => {
    for (const f of readResolvers(paths, config.netns)) add(f.address, 'resolver', f.detail);
  });
  if (config.protect_ssh_sessions) {
    await soft(`the SSH sessions (${paths.utmp})`, () => {
      for (const s of readSshSessions(paths)) add(s.address, 'ssh_session', `${s.user} on ${s.line}`);
    });
  }
  return out;
}

/** The protected set, indexed for the selection and the last filter before a write. */
export async function computeProtectedSet(o: ProtectedOptions): Promise<ProtectedSet> {
  return new ProtectedSet(await computeProtectedMembers(o));
}
