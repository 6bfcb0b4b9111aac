import { describe, expect, it } from 'vitest';
import { parseServersFile, renderServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { parseRpzNames, parseUnboundInclude, renderRpzZone, renderUnboundInclude } from '../../../src/dns/render.js';
import { blockLine } from '../../../src/dns/where.js';
import { resolverLines, type NameAtResolver } from '../../../src/cli/dns-explain.js';

const NX = { action: 'nxdomain' } as const;

describe('what explain shows of the resolver', () => {
  it('the line each backend writes for a name, taken from the file it writes', () => {
    expect(blockLine('dnsmasq', 'evil.test', NX)).toBe('server=/evil.test/');
    expect(renderServersFile(['evil.test'])).toContain(blockLine('dnsmasq', 'evil.test', NX));
    expect(parseServersFile(blockLine('dnsmasq', 'evil.test', NX))).toEqual(['evil.test']);
    expect(blockLine('unbound', 'evil.test', NX)).toBe('local-zone: "evil.test." always_nxdomain');
    expect(parseUnboundInclude(renderUnboundInclude(['evil.test'], NX))).toEqual(['evil.test']);
    expect(blockLine('rpz', 'evil.test', NX)).toBe('evil.test CNAME .');
    expect(renderRpzZone(['evil.test'], NX, 1)).toContain(blockLine('rpz', 'evil.test', NX));
    expect(parseRpzNames(blockLine('rpz', 'evil.test', { action: 'sinkhole', address: '192.0.2.1' }))).toEqual(['evil.test']);
  });

  it('in force, not yet written, still there, left alone', () => {
    const at: NameAtResolver = { plugin: 'dnsmasq', file: '/f', line: 'server=/evil.test/', in_force: true, left_alone: null, error: null };
    expect(resolverLines(at, true)).toEqual(['  at the resolver: dnsmasq, server=/evil.test/ in /f']);
    expect(resolverLines(at, false)).toEqual(['  at the resolver: dnsmasq, server=/evil.test/ in /f (the next sync removes it)']);
    expect(resolverLines({ ...at, in_force: false }, true)).toEqual(['  at the resolver: not in /f yet (the next sync writes server=/evil.test/)']);
    expect(resolverLines({ ...at, in_force: false }, false)).toEqual([]);
    const alone = resolverLines({ ...at, plugin: 'unbound', in_force: false, left_alone: 'local-data "www.evil.test. 300 IN A 10.9.9.9" in unbound.conf' }, true);
    expect(alone).toEqual(['  left alone: local-data "www.evil.test. 300 IN A 10.9.9.9" in unbound.conf (someone else\'s, so the agent does not block the name there)']);
  });
});
