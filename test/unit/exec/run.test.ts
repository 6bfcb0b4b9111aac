import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CommandFailure, runCommand } from '../../../src/exec/run.js';
import { allowReads, stopReads } from '../../../src/exec/children.js';

const node = process.execPath;
const opts = { timeoutMs: 60_000, maxBuffer: 64 * 1024 * 1024 };
const dir = mkdtempSync(join(tmpdir(), 'wcf-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function failure(p: Promise<unknown>): Promise<CommandFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CommandFailure);
  return err as CommandFailure;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('runCommand', () => {
  it('passes shell syntax in arguments through as plain text', async () => {
    const marker = join(dir, 'shell-ran');
    const args = ['a; touch ' + marker, '$(touch ' + marker + ')', '`touch ' + marker + '`', '*', '|', '> x'];
    const r = await runCommand([node, '-e', 'console.log(JSON.stringify(process.argv.slice(1)))', ...args], opts);
    expect(JSON.parse(r.stdout)).toEqual(args);
    expect(() => readFileSync(marker)).toThrow();
  });

  it('writes a large string or Buffer to stdin intact', async () => {
    const line = 'add element inet wcf-agent blocklist { 203.0.113.7 }\n';
    const text = line.repeat(200_000); // ~10 MB, many pipe buffers
    const echo = [node, '-e', 'process.stdin.pipe(process.stdout)'];
    expect((await runCommand(echo, { ...opts, input: text })).stdout).toBe(text);
    const bytes = Buffer.from('é€\n'.repeat(100_000));
    expect((await runCommand(echo, { ...opts, input: bytes })).stdout).toBe(bytes.toString('utf8'));
  });

  it('sets the environment it is given on top of the agent’s own', async () => {
    const r = await runCommand([node, '-e', 'console.log(process.env.LC_ALL, typeof process.env.PATH)'], { ...opts, env: { LC_ALL: 'C' } });
    expect(r.stdout).toBe('C string\n');
  });

  it('fails on a non-zero exit with its code, stdout and stderr', async () => {
    const f = await failure(runCommand([node, '-e', 'console.log("partial"); console.error("ipset v7: no such set"); process.exit(3)'], opts));
    expect(f.reason).toBe('exit');
    expect(f.exitCode).toBe(3);
    expect(f.message).toBe('exit code 3');
    expect(f.stderr).toBe('ipset v7: no such set\n');
    expect(f.stdout).toBe('partial\n');
  });

  it('fails when the child exits without reading a large stdin', async () => {
    const f = await failure(runCommand([node, '-e', 'process.exit(2)'], { ...opts, input: 'x'.repeat(8 * 1024 * 1024) }));
    expect(f.exitCode).toBe(2);
  });

  it('names a missing binary', async () => {
    const f = await failure(runCommand(['wcf-no-such-binary', 'x'], opts));
    expect(f.reason).toBe('not-found');
  });

  it('kills a command that runs past its timeout', async () => {
    const pidFile = join(dir, 'pid-term');
    const f = await failure(runCommand([node, '-e', `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`], { ...opts, timeoutMs: 1000 }));
    expect(f.reason).toBe('timeout');
    expect(f.message).toBe('timed out after 1000 ms');
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('kills a command that ignores SIGTERM with SIGKILL after the grace', async () => {
    const pidFile = join(dir, 'pid-kill');
    const script = `process.on('SIGTERM', () => {}); require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`;
    const f = await failure(runCommand([node, '-e', script], { ...opts, timeoutMs: 1500, killAfterMs: 200 }));
    expect(f.reason).toBe('timeout');
    expect(f.signal).toBe('SIGKILL');
    expect(alive(Number(readFileSync(pidFile, 'utf8')))).toBe(false);
  });

  it('stops a command whose output passes the limit', async () => {
    const f = await failure(runCommand([node, '-e', 'process.stdout.write("x".repeat(1 << 20))'], { ...opts, maxBuffer: 1000 }));
    expect(f.reason).toBe('output-limit');
  });

  it('adds no signal listeners to the agent’s process', async () => {
    const before = ['SIGTERM', 'SIGINT', 'SIGHUP'].map((s) => process.listenerCount(s));
    await runCommand([node, '-e', ''], opts);
    await failure(runCommand([node, '-e', 'setInterval(() => {}, 1000)'], { ...opts, timeoutMs: 200 }));
    expect(['SIGTERM', 'SIGINT', 'SIGHUP'].map((s) => process.listenerCount(s))).toEqual(before);
  });
});

describe('reads while the daemon stops', () => {
  const sleeper = ['sleep', '30'];
  const opts = { timeoutMs: 60_000, maxBuffer: 1024 * 1024 };

  it('a listing running at stopReads() is ended, and so is one started after it, until allowReads()', async () => {
    const running = runCommand(sleeper, { ...opts, readOnly: true });
    stopReads();
    const later = runCommand(sleeper, { ...opts, readOnly: true });
    const ended = [running, later].map(failure);
    const write = runCommand(['true'], opts);
    try {
      for (const f of await Promise.all(ended)) expect(f.message).toMatch(/the agent is stopping/);
      // A write is never refused: it is let finish.
      await expect(write).resolves.toMatchObject({ stdout: '' });
    } finally {
      allowReads();
    }
    await expect(runCommand(['echo', 'read'], { ...opts, readOnly: true })).resolves.toMatchObject({ stdout: 'read\n' });
  });
});
