import { existsSync, lstatSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { askDaemon, controlPath, listenControl, type ControlServer } from '../../../../src/agent/daemon/control-socket.js';

/**
 * Whose control socket it is: a daemon replaces only a socket nobody listens on, and
 * removes only the socket it created itself. Real unix sockets in a temp dir.
 */
const dirs: string[] = [];
const servers: ControlServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'wcf-ctl-'));
  dirs.push(d);
  return d;
}
const silent = pino({ level: 'silent' });
async function listen(dir: string, answer: string): Promise<ControlServer | undefined> {
  const s = await listenControl(dir, async () => answer, silent);
  if (s) servers.push(s);
  return s;
}

describe('the control socket belongs to the daemon that created it', () => {
  it('a socket another process listens on is left alone (this daemon opens none); a stale one is replaced', async () => {
    const dir = tempDir();
    const first = await listen(dir, 'ok first');
    expect(first).toBeDefined();
    expect(await listen(dir, 'ok second')).toBeUndefined();
    expect(await askDaemon(dir, 'overrides', 2000)).toBe('ok first');

    // A socket file nobody listens on (a killed daemon's): replaced.
    const stale = tempDir();
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(join(stale, 'elsewhere.sock'), r));
    renameSync(join(stale, 'elsewhere.sock'), controlPath(stale)); // Node would remove it by its bound name only
    await new Promise<void>((r) => dead.close(() => r()));
    expect(lstatSync(controlPath(stale)).isSocket()).toBe(true);
    expect(await listen(stale, 'ok fresh')).toBeDefined();
    expect(await askDaemon(stale, 'overrides', 2000)).toBe('ok fresh');
  });

  it('closing removes the socket this daemon created, and never one another process put in its place since', async () => {
    const dir = tempDir();
    const first = await listenControl(dir, async () => 'ok first', silent);
    // Its file moved away (as by hand), another daemon's socket at the name now.
    renameSync(controlPath(dir), join(dir, 'moved.sock'));
    const second = await listen(dir, 'ok second');
    expect(second).toBeDefined();
    await first!.close();
    expect(existsSync(controlPath(dir))).toBe(true);
    expect(await askDaemon(dir, 'overrides', 2000)).toBe('ok second');
    await second!.close();
    servers.splice(0);
    expect(existsSync(controlPath(dir))).toBe(false);
  });

  it('a file that is not a socket at the name is left alone and no socket is opened', async () => {
    const dir = tempDir();
    writeFileSync(controlPath(dir), 'not a socket');
    expect(await listen(dir, 'ok')).toBeUndefined();
    expect(lstatSync(controlPath(dir)).isFile()).toBe(true);
  });
});
