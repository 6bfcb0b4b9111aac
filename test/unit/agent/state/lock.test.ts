import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bootId, currentHolder, processStartTime, withLock, type LockHolder } from '../../../../src/agent/state/lock.js';
import { LockHeldError } from '../../../../src/errors.js';
import { ROOT } from '../../../helpers/cli.js';

/**
 * The agent lock: a holder counts only while the very process that wrote it runs (same
 * boot, same PID, same start time). Real processes: a child `sleep` plays the other holder.
 */
let dir: string;
const children: ChildProcess[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'wcf-lock-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  rmSync(join(dir, 'agent.lock'), { force: true });
});

function sleeper(): ChildProcess {
  const c = spawn('sleep', ['600'], { stdio: 'ignore' });
  children.push(c);
  return c;
}
const writeLock = (h: LockHolder | string) => writeFileSync(join(dir, 'agent.lock'), typeof h === 'string' ? h : JSON.stringify(h));
const run = () => withLock(dir, async () => readFileSync(join(dir, 'agent.lock'), 'utf8'));

describe('withLock', () => {
  it('holds the lock while fn runs (recording PID, start time and boot id) and removes it after', async () => {
    const inside = JSON.parse(await run()) as LockHolder;
    expect(inside).toEqual({ pid: process.pid, start: processStartTime(process.pid), boot: bootId() });
    expect(inside.start).toEqual(expect.any(Number));
    expect(existsSync(join(dir, 'agent.lock'))).toBe(false);
  });

  it('a live holder: refused with LockHeldError naming its PID, the lock left alone', async () => {
    const c = sleeper();
    writeLock(currentHolder(c.pid!));
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockHeldError);
    expect((err as LockHeldError).message).toContain(`pid ${c.pid}`);
    expect((err as LockHeldError).code).toBe('WCF_ERR_STATE');
    expect(JSON.parse(readFileSync(join(dir, 'agent.lock'), 'utf8')).pid).toBe(c.pid);
  });

  it('a dead holder: the lock is taken over', async () => {
    const c = sleeper();
    const holder = currentHolder(c.pid!);
    c.kill('SIGKILL');
    await new Promise((r) => c.once('exit', r));
    writeLock(holder);
    expect(JSON.parse(await run()).pid).toBe(process.pid);
  });

  it('a live unrelated process with the recorded PID (reused: other start time, or another boot) is not a holder', async () => {
    const c = sleeper();
    const real = currentHolder(c.pid!);
    writeLock({ ...real, start: real.start! - 1 });
    expect(JSON.parse(await run()).pid).toBe(process.pid);
    writeLock({ ...real, boot: '00000000-0000-0000-0000-000000000000' });
    expect(JSON.parse(await run()).pid).toBe(process.pid);
    // A bare PID (an older agent's lock) of a process that is not a wcf-agent.
    writeLock(String(c.pid));
    expect(JSON.parse(await run()).pid).toBe(process.pid);
  });

  it('its own PID: a lock this very process wrote does not lock it out', async () => {
    writeLock(currentHolder());
    expect(JSON.parse(await run()).pid).toBe(process.pid);
  });

  it('a lock file that is not one (garbage, a symlink) is stale, and its target is left untouched', async () => {
    writeLock('not a lock');
    expect(JSON.parse(await run()).pid).toBe(process.pid);
    const target = join(dir, 'target');
    writeFileSync(target, 'keep me');
    const { symlinkSync } = await import('node:fs');
    symlinkSync(target, join(dir, 'agent.lock'));
    expect(JSON.parse(await run()).pid).toBe(process.pid);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });

  it('jobs of one process share it (a repair during the daemon’s cycle): the lock stays until the last of them ends', async () => {
    const path = join(dir, 'agent.lock');
    let endCycle!: () => void;
    const cycle = withLock(dir, () => new Promise<void>((r) => (endCycle = r)));
    await waitUntil(() => endCycle !== undefined);
    expect(await withLock(dir, async () => existsSync(path))).toBe(true); // the repair ran, not refused
    expect(existsSync(path), 'still held by the cycle').toBe(true);
    // Another process reads this one as the holder meanwhile.
    const other = await execa(process.execPath, ['-e', `fs=require('fs');process.stdout.write(fs.readFileSync(${JSON.stringify(path)},'utf8'))`]);
    expect(JSON.parse(other.stdout).pid).toBe(process.pid);
    endCycle();
    await cycle;
    expect(existsSync(path)).toBe(false);
  });

  it('waitMs: a lock another process holds is waited for, then taken; without it, refused at once', async () => {
    const c = sleeper();
    writeLock(currentHolder(c.pid!));
    await expect(run()).rejects.toBeInstanceOf(LockHeldError);
    setTimeout(() => c.kill('SIGKILL'), 300);
    const started = Date.now();
    const inside = await withLock(dir, async () => readFileSync(join(dir, 'agent.lock'), 'utf8'), 'agent.lock', 20_000);
    expect(JSON.parse(inside).pid).toBe(process.pid);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('processes taking it at once, waiting for each other: one holder at a time (a read-modify-write under it loses nothing)', { timeout: 60_000 }, async () => {
    // Each process adds one to a counter 25 times, reading and writing it with a pause between,
    // under the lock: any moment two hold it (a lock file caught before its holder is written in
    // it, taken for garbage and removed) loses an increment.
    const counter = join(dir, 'counter');
    writeFileSync(counter, '0');
    const url = pathToFileURL(join(ROOT, 'src/agent/state/lock.ts')).href;
    const code = `
      import { readFileSync, writeFileSync } from 'node:fs';
      import { withLock } from ${JSON.stringify(url)};
      const [dir, counter] = process.argv.slice(1);
      for (let i = 0; i < 25; i++) {
        await withLock(dir, async () => {
          const n = Number(readFileSync(counter, 'utf8'));
          await new Promise((r) => setTimeout(r, 2));
          writeFileSync(counter, String(n + 1));
        }, 'store.lock', 30_000);
      }`;
    await Promise.all(Array.from({ length: 12 }, () => execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, dir, counter], { cwd: ROOT })));
    expect(Number(readFileSync(counter, 'utf8'))).toBe(300);
  });

  it('waitMs: still held when the wait ends: LockHeldError', async () => {
    const c = sleeper();
    writeLock(currentHolder(c.pid!));
    await expect(withLock(dir, async () => 'in', 'agent.lock', 200)).rejects.toBeInstanceOf(LockHeldError);
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}
