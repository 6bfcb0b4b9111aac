// Which proxy an https call goes through: config `proxy` for every call, else https_proxy /
// HTTPS_PROXY minus NO_PROXY, as Node's own proxy support decides it for plain http calls.
import { describe, expect, it } from 'vitest';
import { parseProxyUrl, ProxyRoute } from '../../../src/api/proxy-route.js';

describe('parseProxyUrl', () => {
  it('takes host, port (default by scheme) and credentials (decoded, as Basic)', () => {
    expect(parseProxyUrl('http://proxy.corp:3128')).toEqual({ protocol: 'http:', host: 'proxy.corp', port: 3128, authority: 'proxy.corp:3128' });
    expect(parseProxyUrl('https://[::1]')).toMatchObject({ protocol: 'https:', host: '::1', port: 443, authority: '[::1]:443' });
    const auth = parseProxyUrl('http://a%40b:p%3Aw@10.0.0.1')!.authorization!;
    expect(Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString()).toBe('a@b:p:w');
    expect(parseProxyUrl('http://10.0.0.1')!.authority).toBe('10.0.0.1:80');
  });

  it('refuses what is not an http(s) URL', () => {
    expect(parseProxyUrl('socks5://10.0.0.1:1080')).toBeUndefined();
    expect(parseProxyUrl('not a url')).toBeUndefined();
  });
});

describe('ProxyRoute', () => {
  const P = 'http://proxy.corp:3128';

  it('config proxy: every call, NO_PROXY ignored', () => {
    const r = new ProxyRoute(P, { NO_PROXY: '*' });
    expect(r.for('api.corp', 443)?.authority).toBe('proxy.corp:3128');
  });

  it('environment: https_proxy before HTTPS_PROXY; HTTP_PROXY alone does not carry https; other schemes ignored', () => {
    expect(new ProxyRoute(undefined, { https_proxy: 'http://low:1', HTTPS_PROXY: 'http://up:2' }).for('api', 443)?.authority).toBe('low:1');
    expect(new ProxyRoute(undefined, { HTTP_PROXY: P }).configured).toBe(false);
    expect(new ProxyRoute(undefined, { HTTPS_PROXY: 'socks5://x:1080' }).configured).toBe(false);
    expect(new ProxyRoute(undefined, { HTTPS_PROXY: 'proxy.corp:3128' }).configured).toBe(false);
  });

  it('NO_PROXY: *, host, host:port, .suffix, *.suffix and IPv4 ranges exempt; others go through the proxy', () => {
    const route = (noProxy: string) => new ProxyRoute(undefined, { HTTPS_PROXY: P, no_proxy: noProxy });
    const direct = (noProxy: string, host: string, port = 443) => route(noProxy).for(host, port) === undefined;
    expect(direct('*', 'api.corp')).toBe(true);
    expect(direct('API.corp', 'api.corp')).toBe(true);
    expect(direct('api.corp:8443', 'api.corp', 8443)).toBe(true);
    expect(direct('api.corp:8443', 'api.corp', 443)).toBe(false);
    expect(direct('.corp', 'api.corp')).toBe(true);
    expect(direct('.corp', 'corp')).toBe(true);
    expect(direct('.corp', 'apicorp')).toBe(false);
    expect(direct('*.corp', 'api.corp')).toBe(true);
    expect(direct('10.0.0.0-10.0.0.255', '10.0.0.7')).toBe(true);
    expect(direct('10.0.0.0-10.0.0.255', '10.0.1.7')).toBe(false);
    expect(direct('other.example, .corp', 'x.corp')).toBe(true);
    expect(direct('other.example', 'api.corp')).toBe(false);
  });
});
