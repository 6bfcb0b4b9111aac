import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.js';
import { isLoopbackHost, parseListen } from '../../../src/metrics/listen.js';

describe('parseListen (metrics_listen)', () => {
  it.each([
    ['9464', { host: '127.0.0.1', port: 9464, loopback: true, explicitHost: false }],
    [':9464', { host: '127.0.0.1', port: 9464, loopback: true, explicitHost: false }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0, loopback: true, explicitHost: true }],
    ['127.1.2.3:9464', { host: '127.1.2.3', port: 9464, loopback: true, explicitHost: true }],
    ['localhost:9464', { host: 'localhost', port: 9464, loopback: true, explicitHost: true }],
    ['[::1]:9464', { host: '::1', port: 9464, loopback: true, explicitHost: true }],
    ['0.0.0.0:9464', { host: '0.0.0.0', port: 9464, loopback: false, explicitHost: true }],
    ['10.1.2.3:9464', { host: '10.1.2.3', port: 9464, loopback: false, explicitHost: true }],
    ['[::]:9464', { host: '::', port: 9464, loopback: false, explicitHost: true }],
  ])('%s', (value, expected) => {
    expect(parseListen(value)).toEqual(expected);
  });

  it.each(['', 'abc', '127.0.0.1', '127.0.0.1:', '127.0.0.1:65536', '127.0.0.1:-1', 'example.com:9464', '::1:9464', '[::1]', '1.2.3:80'])(
    'rejects %j naming metrics_listen',
    (value) => {
      let err: unknown;
      try {
        parseListen(value);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).problems[0]).toMatch(/^metrics_listen: /);
    },
  );

  it('knows loopback hosts', () => {
    expect(isLoopbackHost('127.0.0.1')).toBe(true);
    expect(isLoopbackHost('0:0:0:0:0:0:0:1')).toBe(true);
    expect(isLoopbackHost('128.0.0.1')).toBe(false);
    expect(isLoopbackHost('::')).toBe(false);
  });
});
