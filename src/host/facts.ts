import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import { parseResolvConf, parseSearchDomains } from './resolv-conf.js';
import { parseDefaultGateways, parseProcNetRoute } from './routes.js';
import { parseUtmp, type UtmpSession } from './utmp.js';

/** Files the protected set reads; tests point them elsewhere. */
export interface HostPaths {
  resolvConf: string;
  /** systemd-resolved's upstream servers (resolv.conf itself then names only its 127.0.0.53 stub). */
  resolvedUpstreams: string;
  /** `ip netns exec NAME` bind-mounts `<netnsEtc>/NAME/resolv.conf` over /etc/resolv.conf. */
  netnsEtc: string;
  utmp: string;
  /** The kernel's routes for this process's namespace (gateways without running `ip`). */
  procNetRoute: string;
}

export const DEFAULT_HOST_PATHS: HostPaths = {
  resolvConf: '/etc/resolv.conf',
  resolvedUpstreams: '/run/systemd/resolve/resolv.conf',
  netnsEtc: '/etc/netns',
  utmp: '/var/run/utmp',
  procNetRoute: '/proc/net/route',
};

/** How long a host name lookup may take before the protected set goes on without it. */
const LOOKUP_TIMEOUT_MS = 5000;

export interface Found {
  readonly address: string;
  readonly detail: string;
}

/** A file's text, or undefined when it does not exist; other errors are thrown. */
function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The name servers the agent's lookups (and the host's) go to: the
 * namespace's own resolv.conf when `netns` has one, else /etc/resolv.conf;
 * plus systemd-resolved's upstreams when that file exists.
 */
export function readResolvers(paths: HostPaths, netns?: string): Found[] {
  return resolvConfTexts(paths, netns).flatMap(([file, text]) => parseResolvConf(text).map((address) => ({ address, detail: file })));
}

/** The search domains of the same files as readResolvers, each with the file that names it first. */
export function readSearchDomains(paths: HostPaths, netns?: string): { name: string; file: string }[] {
  const out = new Map<string, string>();
  for (const [file, text] of resolvConfTexts(paths, netns)) for (const name of parseSearchDomains(text)) if (!out.has(name)) out.set(name, file);
  return [...out].map(([name, file]) => ({ name, file }));
}

/** The resolv.conf files the host's lookups read, as [file, text]: the namespace's own or /etc/resolv.conf, and systemd-resolved's. */
function resolvConfTexts(paths: HostPaths, netns?: string): [string, string][] {
  const nsFile = netns ? join(paths.netnsEtc, netns, 'resolv.conf') : undefined;
  const nsText = nsFile === undefined ? undefined : readIfPresent(nsFile);
  const read: [string, string | undefined][] = [
    nsText !== undefined ? [nsFile!, nsText] : [paths.resolvConf, readIfPresent(paths.resolvConf)],
    [paths.resolvedUpstreams, readIfPresent(paths.resolvedUpstreams)],
  ];
  return read.filter((r): r is [string, string] => r[1] !== undefined);
}

/**
 * The IPv4 default gateways: from /proc/net/route (no process: a dry run and
 * `plan` run no command at all), or inside `netns` with `ip -n NAME`.
 */
export async function readGateways(runner: CommandRunner, paths: HostPaths, netns?: string): Promise<string[]> {
  if (!netns) return parseProcNetRoute(readFileSync(paths.procNetRoute, 'latin1'), endianness() === 'LE');
  const { stdout } = await runner.run('ip', ['-j', '-4', '-n', netns, 'route', 'show', 'default']);
  return parseDefaultGateways(stdout.trim());
}

/** Logged-in sessions with a remote IPv4 address (utmp USER_PROCESS records); none when the file is absent. */
export function readSshSessions(paths: HostPaths): UtmpSession[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(paths.utmp);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return parseUtmp(bytes);
}

/** A host name's IPv4 addresses (an IPv4 literal as it is), or why there are none. */
export async function resolveHostname(host: string): Promise<{ addresses: string[]; error?: string }> {
  if (isIPv4(host)) return { addresses: [host] };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('lookup timed out'), { code: 'ETIMEOUT' })), LOOKUP_TIMEOUT_MS);
    timer.unref();
  });
  try {
    const found = await Promise.race([lookup(host, { all: true, family: 4 }), timeout]);
    return { addresses: [...new Set(found.map((f) => f.address))], ...(found.length ? {} : { error: 'no IPv4 address' }) };
  } catch (err) {
    return { addresses: [], error: (err as NodeJS.ErrnoException).code ?? errorMessage(err) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The proxies the API client goes through: `proxy` from config.json, else
 * the HTTPS_PROXY / HTTP_PROXY environment variables it falls back to. Each
 * as its host name or address and where it was named.
 */
export function proxyHosts(configProxy: string | undefined, env: NodeJS.ProcessEnv): { host: string; detail: string }[] {
  const named: [string, string][] = configProxy
    ? [['proxy', configProxy]]
    : (['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'] as const).flatMap((k) => (env[k] ? [[k, env[k]!] as [string, string]] : []));
  const out: { host: string; detail: string }[] = [];
  for (const [detail, value] of named) {
    let host: string;
    try {
      host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`).hostname.replace(/^\[|\]$/g, '');
    } catch {
      continue; // the client refuses such a proxy too
    }
    if (host && !out.some((o) => o.host === host)) out.push({ host, detail });
  }
  return out;
}
