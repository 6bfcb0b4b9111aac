import { networkInterfaces } from 'node:os';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { apiAddresses, hostAddresses, namespaceAddresses, protectedNetworks } from '../../../src/agent/protected.js';

function logger() {
  const lines: { level: number; msg: string; host?: string }[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
  return { log, lines };
}

/** The host's IPv4 addresses as the OS lists them. */
function osIPv4(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .filter((a) => a.family === 'IPv4')
    .map((a) => a.address);
}

describe('hostAddresses', () => {
  it('lists every IPv4 address of every interface as a /32, loopback included', () => {
    const got = hostAddresses();
    expect(got.every((c) => c.prefix === 32)).toBe(true);
    expect(got.map((c) => c.text).sort()).toEqual(osIPv4().sort());
    expect(got.map((c) => c.text)).toContain('127.0.0.1');
  });
});

describe('apiAddresses', () => {
  it('an IPv4 literal in base_url is protected as is, without a lookup', async () => {
    const { log } = logger();
    expect((await apiAddresses('https://203.0.113.9:8443/api/v1', log)).map((c) => c.text)).toEqual(['203.0.113.9']);
    expect((await apiAddresses('http://198.51.100.20/api/v1', log)).map((c) => c.text)).toEqual(['198.51.100.20']);
  });

  it('a host name is resolved (localhost -> 127.0.0.1)', async () => {
    const { log } = logger();
    const got = await apiAddresses('http://localhost:8080/api/v1', log);
    expect(got.map((c) => c.text)).toContain('127.0.0.1');
    expect(got.every((c) => c.prefix === 32)).toBe(true);
  });

  it('a failed lookup gives no addresses, logged, and does not throw', async () => {
    const { log, lines } = logger();
    await expect(apiAddresses('https://no-such-host.invalid/api/v1', log)).resolves.toEqual([]);
    expect(lines.some((l) => /could not resolve the API host/.test(l.msg) && l.host === 'no-such-host.invalid')).toBe(true);
  });
});

describe('namespaceAddresses', () => {
  it('a namespace that does not exist gives no addresses and a warning', async () => {
    const { log, lines } = logger();
    await expect(namespaceAddresses('wcf-no-such-ns-0', log)).resolves.toEqual([]);
    expect(lines.some((l) => l.level === 40 && /wcf-no-such-ns-0/.test(l.msg))).toBe(true);
  });
});

describe('protectedNetworks', () => {
  it('is the allowlist (normalised) plus the host addresses plus the API addresses', async () => {
    const { log } = logger();
    const got = (await protectedNetworks(['192.0.2.77/24', '198.51.100.5'], 'http://203.0.113.9/api/v1', log)).map((c) => c.text);
    expect(got.slice(0, 2)).toEqual(['192.0.2.0/24', '198.51.100.5']);
    for (const a of osIPv4()) expect(got).toContain(a);
    expect(got).toContain('203.0.113.9');
  });

  it('an unresolvable API host still protects the allowlist and the host', async () => {
    const { log } = logger();
    const got = (await protectedNetworks(['198.51.100.5'], 'https://no-such-host.invalid/api/v1', log)).map((c) => c.text);
    expect(got).toEqual(['198.51.100.5', ...hostAddresses().map((c) => c.text)]);
  });

  it('an invalid allowlist entry is an error naming its index', async () => {
    const { log } = logger();
    await expect(protectedNetworks(['198.51.100.5', '10.1'], 'http://203.0.113.9/api/v1', log)).rejects.toThrow(/allowlist\.1/);
  });
});
