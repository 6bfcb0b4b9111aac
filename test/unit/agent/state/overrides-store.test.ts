import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { mustParseCidr } from '../../../../src/net/ipv4.js';
import { loadOverrides, saveOverrides, withOverride, withoutOverride } from '../../../../src/agent/state/overrides-store.js';
import { askDaemon, controlPath, listenControl } from '../../../../src/agent/daemon/control-socket.js';
import { StateError } from '../../../../src/errors.js';

const NOW = 1_800_000_000;
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'wcf-ov-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const ov = (cidr: string, action: 'allow' | 'block', expiresAt: number | null = null) => ({ cidr: mustParseCidr(cidr, 't'), action, createdAt: NOW, expiresAt });

describe('the overrides file', () => {
  it('round-trips, root-only; one override per network (the newest wins); remove answers undefined when there is none', () => {
    const dir = tempDir();
    expect(loadOverrides(dir)).toEqual([]);
    let list = withOverride([], { ...ov('198.51.100.7', 'block', NOW + 60), note: 'scanner' }, NOW);
    list = withOverride(list, ov('198.51.100.7', 'allow'), NOW);
    list = withOverride(list, ov('198.51.100.0/24', 'block'), NOW);
    saveOverrides(dir, list);
    expect(statSync(join(dir, 'overrides.json')).mode & 0o777).toBe(0o600);
    expect(loadOverrides(dir).map((o) => `${o.action} ${o.cidr.text}`)).toEqual(['allow 198.51.100.7', 'block 198.51.100.0/24']);
    expect(withoutOverride(loadOverrides(dir), '198.51.100.7', NOW)?.map((o) => o.cidr.text)).toEqual(['198.51.100.0/24']);
    expect(withoutOverride(loadOverrides(dir), '198.51.100.8', NOW)).toBeUndefined();
  });

  it('an unusable file is an error naming the file and the field, never "no overrides" (a dropped allow would block a freed host)', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'overrides.json'), JSON.stringify({ version: 1, overrides: [{ cidr: '198.51.100.300', action: 'allow', createdAt: NOW, expiresAt: null }] }));
    expect(() => loadOverrides(dir)).toThrow(StateError);
    expect(() => loadOverrides(dir)).toThrow(/overrides\.json: overrides\[0\]\.cidr: not an IPv4 address or network/);
  });

  it('a file that is not JSON: the error says so and where, and never quotes its content', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'overrides.json'), '{"version":1,"overrides":[ SECRET-\x1b]0;title\x07 ]}');
    expect(() => loadOverrides(dir)).toThrow(StateError);
    const message = (() => {
      try {
        loadOverrides(dir);
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toMatch(/overrides\.json: not valid JSON at line 1, column 28 \(fix or remove the file\)$/);
    expect(message).not.toContain('SECRET');
    expect(message).not.toContain('\x1b');
  });
});

describe('the control socket', () => {
  it('answers the overrides command with the handler\'s line; an unknown command gets an error and never reaches the handler; no daemon = undefined', async () => {
    const dir = tempDir();
    expect(await askDaemon(dir, 'overrides', 2000)).toBeUndefined();
    const calls: string[] = [];
    const server = await listenControl(dir, async (cmd) => {
      calls.push(cmd);
      return 'ok 3 entries applied';
    }, pino({ level: 'silent' }));
    try {
      expect(statSync(controlPath(dir)).mode & 0o777).toBe(0o600);
      expect(await askDaemon(dir, 'overrides', 2000)).toBe('ok 3 entries applied');
      const other = await new Promise<string>((resolve) => {
        const s = createConnection(controlPath(dir));
        let a = '';
        s.on('connect', () => s.write('rm -rf /\n'));
        s.on('data', (d) => (a += d.toString()));
        s.on('end', () => resolve(a));
      });
      expect(other).toBe('error unknown command\n');
      expect(calls).toEqual(['overrides']);
    } finally {
      await server!.close();
    }
    expect(await askDaemon(dir, 'overrides', 2000)).toBeUndefined();
  });
});
