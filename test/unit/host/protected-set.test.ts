import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { computeProtectedMembers, hostAddresses, resolveApiHost, type ProtectedOptions } from '../../../src/host/protected-set.js';
import type { HostPaths } from '../../../src/host/facts.js';

function logger() {
  const lines: { level: number; msg: string; host?: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
  return { log, lines };
}

const tmp = mkdtempSync(join(tmpdir(), 'wcf-protected-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Host files in a temp dir: a resolv.conf, systemd-resolved's upstreams, a utmp written by the real `utmpdump -r`. */
async function hostFiles(name: string, opts: { resolv?: string; upstreams?: string; netns?: Record<string, string>; utmp?: string[] }): Promise<HostPaths> {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'netns'), { recursive: true });
  const paths: HostPaths = { resolvConf: join(dir, 'resolv.conf'), resolvedUpstreams: join(dir, 'upstreams.conf'), netnsEtc: join(dir, 'netns'), utmp: join(dir, 'utmp'), procNetRoute: '/proc/net/route' };
  if (opts.resolv !== undefined) writeFileSync(paths.resolvConf, opts.resolv);
  if (opts.upstreams !== undefined) writeFileSync(paths.resolvedUpstreams, opts.upstreams);
  for (const [ns, text] of Object.entries(opts.netns ?? {})) {
    mkdirSync(join(paths.netnsEtc, ns));
    writeFileSync(join(paths.netnsEtc, ns, 'resolv.conf'), text);
  }
  if (opts.utmp) {
    const r = await execa('utmpdump', ['-r'], { input: opts.utmp.join('\n') + '\n', encoding: 'buffer' });
    writeFileSync(paths.utmp, r.stdout);
  }
  return paths;
}

const line = (type: number, user: string, tty: string, host: string) =>
  `[${type}] [01234] [ts/0] [${user.padEnd(8)}] [${tty.padEnd(12)}] [${host.padEnd(20)}] [${host.padEnd(15)}] [2026-11-23T05:00:00,000000+00:00]`;

const baseConfig = { allowlist: [] as string[], base_url: 'http://203.0.113.9/api/v1', proxy: undefined, netns: undefined, protect_ssh_sessions: true };

async function members(o: Partial<Omit<ProtectedOptions, 'config'>> & { config?: Partial<ProtectedOptions['config']> }) {
  const { log, lines } = logger();
  const got = await computeProtectedMembers({ logger: log, env: {}, ...o, config: { ...baseConfig, ...o.config } });
  return { got, lines, by: (source: string) => got.filter((m) => m.source === source).map((m) => m.cidr.text) };
}

/** The host's IPv4 addresses as `ip -4 addr` lists them: another source than the code's own call. */
async function ipAddrIPv4(): Promise<string[]> {
  const { stdout } = await execa('ip', ['-j', '-4', 'addr', 'show']);
  return (JSON.parse(stdout) as { addr_info?: { local?: string }[] }[]).flatMap((l) => (l.addr_info ?? []).flatMap((a) => (a.local ? [a.local] : [])));
}

describe('hostAddresses', () => {
  it('lists every IPv4 address of every interface as a /32, loopback included (as ip -4 addr lists them)', async () => {
    const got = hostAddresses();
    const listed = await ipAddrIPv4();
    expect(listed.length, 'this machine lists addresses besides loopback').toBeGreaterThan(1);
    expect(got.every((c) => c.prefix === 32)).toBe(true);
    expect(got.map((c) => c.text).sort()).toEqual([...new Set(listed)].sort());
    expect(got.map((c) => c.text)).toContain('127.0.0.1');
  });
});

describe('resolveApiHost', () => {
  it('an IPv4 literal is taken as is; localhost resolves; a failed lookup gives no address and a reason', async () => {
    expect(await resolveApiHost('https://203.0.113.9:8443/api/v1')).toEqual({ host: '203.0.113.9', addresses: ['203.0.113.9'] });
    expect((await resolveApiHost('http://localhost:8080/api/v1')).addresses).toContain('127.0.0.1');
    expect(await resolveApiHost('https://no-such-host.invalid/api/v1')).toMatchObject({ addresses: [], error: expect.any(String) });
  });
});

describe('computeProtectedMembers', () => {
  it('names every member with its source: built-in ranges, allowlist, own addresses, API, resolvers, SSH sessions', async () => {
    const paths = await hostFiles('all', {
      resolv: '# generated\nnameserver 192.0.2.53\nnameserver 2001:db8::53\nsearch example.net\n',
      upstreams: 'nameserver 198.51.100.53\n',
      utmp: [line(7, 'root', 'pts/0', '198.51.100.23'), line(6, 'LOGIN', 'pts/1', '203.0.113.66'), line(8, 'alice', 'pts/2', '203.0.113.77')],
    });
    const { by } = await members({ config: { allowlist: ['192.0.2.77/24'] }, paths });
    expect(by('loopback')).toEqual(['127.0.0.0/8']);
    expect(by('this_network')).toEqual(['0.0.0.0/8']);
    expect(by('link_local')).toEqual(['169.254.0.0/16']);
    expect(by('multicast')).toEqual(['224.0.0.0/4']);
    expect(by('reserved')).toEqual(['240.0.0.0/4']);
    expect(by('allowlist')).toEqual(['192.0.2.0/24']);
    expect(by('own_address').sort()).toEqual([...new Set(await ipAddrIPv4())].sort());
    expect(by('api_server')).toEqual(['203.0.113.9']);
    expect(by('resolver')).toEqual(['192.0.2.53', '198.51.100.53']);
    // Only the logged-in session: not the LOGIN prompt (not authenticated), not the closed one.
    expect(by('ssh_session')).toEqual(['198.51.100.23']);
  });

  it('the default gateways of the route table are members (up routes with a gateway only)', async () => {
    const paths = await hostFiles('gwfile', {});
    const routes = join(tmp, 'gwfile', 'route');
    writeFileSync(
      routes,
      [
        'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT',
        'eth0\t00000000\t016433C6\t0003\t0\t0\t0\t00000000\t0\t0\t0', // default via 198.51.100.1, up
        'eth1\t00000000\t026433C6\t0002\t0\t0\t0\t00000000\t0\t0\t0', // default via 198.51.100.2, down
        'eth0\t006433C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0', // on-link network
      ].join('\n') + '\n',
    );
    expect((await members({ paths: { ...paths, procNetRoute: routes } })).by('gateway')).toEqual(['198.51.100.1']);
  });

  it('the machine’s default gateway is a member (/proc/net/route agrees with ip route)', async () => {
    const { stdout } = await execa('ip', ['-j', '-4', 'route', 'show', 'default']);
    const gateways = (JSON.parse(stdout || '[]') as { gateway?: string }[]).flatMap((r) => (r.gateway ? [r.gateway] : []));
    // A machine without a default route would check nothing: fail instead.
    expect(gateways.length, 'this test needs a default route with a gateway on this machine').toBeGreaterThan(0);
    const { by } = await members({ paths: await hostFiles('gw', {}) });
    expect(by('gateway')).toEqual(gateways);
  });

  it('protect_ssh_sessions false leaves the sessions out', async () => {
    const paths = await hostFiles('nossh', { utmp: [line(7, 'root', 'pts/0', '198.51.100.23')] });
    expect((await members({ config: { protect_ssh_sessions: false }, paths })).by('ssh_session')).toEqual([]);
  });

  it('with netns, the namespace’s own resolv.conf replaces /etc/resolv.conf (as ip netns exec bind-mounts it)', async () => {
    const paths = await hostFiles('nsresolv', { resolv: 'nameserver 192.0.2.53\n', netns: { labns: 'nameserver 192.0.2.99\n' } });
    const { by } = await members({ config: { netns: 'labns' }, paths });
    expect(by('resolver')).toEqual(['192.0.2.99']);
  });

  it('the proxy: config proxy by address, else HTTPS_PROXY/HTTP_PROXY from the environment', async () => {
    const paths = await hostFiles('proxy', {});
    expect((await members({ config: { proxy: 'http://192.0.2.8:3128' }, paths, env: { HTTPS_PROXY: 'http://192.0.2.9:3128' } })).by('proxy')).toEqual(['192.0.2.8']);
    expect((await members({ paths, env: { HTTPS_PROXY: 'http://192.0.2.9:3128', http_proxy: '192.0.2.10:8080' } })).by('proxy')).toEqual(['192.0.2.9', '192.0.2.10']);
    expect((await members({ config: { proxy: 'http://localhost:3128' }, paths })).by('proxy')).toContain('127.0.0.1');
  });

  it('an API host that does not resolve is protected by its last known addresses; a new resolution is remembered', async () => {
    const paths = await hostFiles('lastknown', {});
    const lastKnownApi = { host: 'no-such-host.invalid', addresses: ['198.51.100.44'], at: 1 };
    const failing = await members({ config: { base_url: 'https://no-such-host.invalid/api/v1' }, paths, lastKnownApi });
    expect(failing.by('api_server')).toEqual([]);
    expect(failing.by('api_server_last_known')).toEqual(['198.51.100.44']);
    // Last known addresses of another host name are not this API's.
    expect((await members({ config: { base_url: 'https://other.invalid/api/v1' }, paths, lastKnownApi })).by('api_server_last_known')).toEqual([]);

    const remembered: unknown[] = [];
    const ok = await members({ config: { base_url: 'http://localhost:1/api/v1' }, paths, lastKnownApi, rememberApi: (k) => remembered.push(k) });
    expect(ok.by('api_server')).toContain('127.0.0.1');
    expect(remembered).toEqual([expect.objectContaining({ host: 'localhost', addresses: expect.arrayContaining(['127.0.0.1']) })]);
  });

  it('offline (start-up restore): no lookups, the API by its last known addresses, a proxy only by address', async () => {
    const paths = await hostFiles('offline', {});
    const { by } = await members({
      config: { base_url: 'http://localhost:1/api/v1', proxy: 'http://localhost:3128' },
      paths,
      offline: true,
      lastKnownApi: { host: 'localhost', addresses: ['198.51.100.45'], at: 1 },
    });
    expect(by('api_server')).toEqual([]);
    expect(by('api_server_last_known')).toEqual(['198.51.100.45']);
    expect(by('proxy')).toEqual([]);
  });

  it('an unreadable source is a warning naming it; the other members still count', async () => {
    const paths = await hostFiles('broken', { resolv: 'nameserver 192.0.2.53\n' });
    mkdirSync(paths.utmp); // reading a directory fails with EISDIR
    const { by, lines } = await members({ paths });
    expect(by('resolver')).toEqual(['192.0.2.53']);
    expect(lines.some((l) => l.level === 40 && /SSH sessions/.test(l.msg) && /EISDIR/.test(l.msg))).toBe(true);
  });

  it('a netns that does not exist is a warning naming it; the host’s own members still count', async () => {
    const { by, lines } = await members({ config: { netns: 'wcf-no-such-ns-0' }, paths: await hostFiles('nons', { resolv: 'nameserver 192.0.2.53\n' }) });
    expect(lines.some((l) => l.level === 40 && /network namespace wcf-no-such-ns-0/.test(l.msg))).toBe(true);
    expect(by('own_address').sort()).toEqual([...new Set(await ipAddrIPv4())].sort());
    expect(by('resolver')).toEqual(['192.0.2.53']);
  });

  it('an invalid allowlist entry is an error naming its index', async () => {
    await expect(members({ config: { allowlist: ['198.51.100.5', '10.1'] }, paths: await hostFiles('bad', {}) })).rejects.toThrow(/allowlist\.1/);
  });
});
