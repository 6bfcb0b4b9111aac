import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lockHolder, withLock } from '../../../../src/agent/state/lock.js';
import { currentHolder, pidNamespace } from '../../../../src/agent/state/flock.js';
import { LockHeldError } from '../../../../src/errors.js';
import { ROOT } from '../../../helpers/cli.js';

/**
 * The agent lock: a kernel lock (flock) on a file in the state dir, held by real processes
 * (child Node processes running the lock module, one of them in a PID namespace of its own).
 */
let dir: string;
const children: ChildProcess[] = [];
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'wcf-lock-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => (c.once('exit', r), c.kill('SIGKILL'))))));
  rmSync(join(dir, 'agent.lock'), { force: true });
});

const url = pathToFileURL(join(ROOT, 'src/agent/state/lock.ts')).href;
/** A process that takes the lock, prints its PID as it sees it once it holds it, and holds it until killed. */
const HOLDER = `
  import { withLock } from ${JSON.stringify(url)};
  await withLock(process.argv[1], async () => {
    process.stdout.write(process.pid + '\\n');
    await new Promise(() => setInterval(() => {}, 60_000)); // held until killed
  });`;

/** Start a holder (behind `prefix`, e.g. a new PID namespace); resolves with its PID as it sees it once it holds the lock. */
async function holder(prefix: string[] = []): Promise<{ child: ChildProcess; pid: number }> {
  const argv = [...prefix, process.execPath, '--import', 'tsx', '--input-type=module', '-e', HOLDER, dir];
  const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('exit', (code) => reject(new Error(`the holder exited (${code}) before it held the lock`)));
  });
  return { child, pid };
}

const path = () => join(dir, 'agent.lock');
const run = () => withLock(dir, async () => readFileSync(path(), 'utf8'));

describe('withLock', () => {
  it('holds the lock while fn runs, with its PID and PID namespace in the file; afterwards free, the file kept but emptied', async () => {
    const inside = JSON.parse(await run()) as Record<string, unknown>;
    expect(inside).toEqual({ pid: process.pid, pidns: pidNamespace(), startedAt: expect.any(Number) });
    expect(Math.abs((inside.startedAt as number) - (Date.now() / 1000 - process.uptime()))).toBeLessThan(3);
    expect(readFileSync(path(), 'utf8')).toBe('');
    expect(await lockHolder(dir)).toBeUndefined();
  });

  it('another process holds it: refused with LockHeldError naming its PID, the lock left alone; `lockHolder` names it too', async () => {
    const h = await holder();
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockHeldError);
    expect((err as LockHeldError).message).toContain(`another wcf-agent (pid ${h.pid}) holds ${path()}`);
    expect((err as LockHeldError).code).toBe('WCF_ERR_STATE');
    expect(JSON.parse(readFileSync(path(), 'utf8')).pid).toBe(h.pid);
    expect((await lockHolder(dir))?.holder?.pid).toBe(h.pid);
  });

  it('a holder in another PID namespace (its PID and /proc are not ours): refused, naming its PID there and the namespace', async () => {
    const h = await holder(['unshare', '--pid', '--fork', '--mount-proc', '--kill-child']);
    expect(h.pid).toBe(1); // the first process of its own namespace
    const err = await run().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockHeldError);
    expect((err as LockHeldError).message).toMatch(/another wcf-agent \(pid 1 in another PID namespace: pid:\[\d+\]\) holds/);
    expect(JSON.parse(readFileSync(path(), 'utf8')).pid).toBe(1);
    h.child.kill('SIGKILL'); // unshare's --kill-child takes the holder with it, a moment later
    expect(JSON.parse(await withLock(dir, async () => readFileSync(path(), 'utf8'), 'agent.lock', 10_000)).pid).toBe(process.pid);
  });

  it('a holder killed with SIGKILL: the kernel let go, the lock is taken at once (its identity, left in the file, is no holder)', async () => {
    const h = await holder();
    h.child.kill('SIGKILL');
    await new Promise((r) => h.child.once('exit', r));
    expect(JSON.parse(readFileSync(path(), 'utf8')).pid).toBe(h.pid);
    expect(await lockHolder(dir)).toBeUndefined();
    expect(JSON.parse(await run()).pid).toBe(process.pid);
  });

  it('a file naming a live process, which holds no lock, is no holder', async () => {
    const sleeper = spawn('sleep', ['600'], { stdio: 'ignore' });
    children.push(sleeper);
    writeFileSync(path(), JSON.stringify({ ...currentHolder(), pid: sleeper.pid }));
    expect(await lockHolder(dir)).toBeUndefined();
    expect(JSON.parse(await run()).pid).toBe(process.pid);
  });

  it('a lock name that is not a file (a symlink) is replaced, and its target is left untouched', async () => {
    const target = join(dir, 'target');
    writeFileSync(target, 'keep me');
    symlinkSync(target, path());
    expect(await lockHolder(dir)).toBeUndefined();
    expect(JSON.parse(await run()).pid).toBe(process.pid);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });

  it('jobs of one process share it (a repair during the daemon’s cycle): the lock stays until the last of them ends', async () => {
    let endCycle!: () => void;
    let inCycle = false;
    const cycle = withLock(dir, () => ((inCycle = true), new Promise<void>((r) => (endCycle = r))));
    // A job that starts while the cycle is still taking the lock shares that take.
    const early = withLock(dir, async () => 'early');
    await waitUntil(() => inCycle);
    expect(await early).toBe('early');
    expect(await withLock(dir, async () => 'repair')).toBe('repair'); // the repair ran, not refused
    // Another process sees this one as the holder meanwhile, and is refused.
    const other = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', HOLDER, dir], { cwd: ROOT, reject: false, timeout: 20_000 });
    expect(other.exitCode).not.toBe(0);
    expect(other.stderr).toContain(`another wcf-agent (pid ${process.pid})`);
    expect((await lockHolder(dir))?.holder?.pid).toBe(process.pid);
    endCycle();
    await cycle;
    expect(await lockHolder(dir)).toBeUndefined();
  });

  it('waitMs: a lock another process holds is waited for, then taken; without it, refused', async () => {
    const h = await holder();
    await expect(run()).rejects.toBeInstanceOf(LockHeldError);
    setTimeout(() => h.child.kill('SIGKILL'), 300);
    const inside = await withLock(dir, async () => readFileSync(path(), 'utf8'), 'agent.lock', 20_000);
    expect(JSON.parse(inside).pid).toBe(process.pid);
  });

  it('waitMs: still held when the wait ends: LockHeldError', async () => {
    await holder();
    const started = Date.now();
    await expect(withLock(dir, async () => 'in', 'agent.lock', 700)).rejects.toBeInstanceOf(LockHeldError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
  });

  it('looks (`lockHolder`, as `status` runs it) never make a taker fail: a process taking it while another looks in a loop gets it', { timeout: 60_000 }, async () => {
    let looking = true;
    const looks = (async () => {
      let n = 0;
      while (looking) {
        await lockHolder(dir);
        n++;
      }
      return n;
    })();
    try {
      for (let i = 0; i < 10; i++) {
        const r = await execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import { withLock } from ${JSON.stringify(url)}; await withLock(process.argv[1], async () => {});`, dir], { cwd: ROOT, reject: false });
        expect(r.exitCode, r.stderr).toBe(0);
      }
    } finally {
      looking = false;
    }
    expect(await looks).toBeGreaterThan(10);
  });

  it('processes taking it at once, waiting for each other: one holder at a time (a read-modify-write under it loses nothing)', { timeout: 120_000 }, async () => {
    // Each process adds one to a counter 25 times, reading and writing it with a pause between,
    // under the lock: any moment two hold it loses an increment.
    const counter = join(dir, 'counter');
    writeFileSync(counter, '0');
    const code = `
      import { readFileSync, writeFileSync } from 'node:fs';
      import { withLock } from ${JSON.stringify(url)};
      const [dir, counter] = process.argv.slice(1);
      for (let i = 0; i < 25; i++) {
        await withLock(dir, async () => {
          const n = Number(readFileSync(counter, 'utf8'));
          await new Promise((r) => setTimeout(r, 2));
          writeFileSync(counter, String(n + 1));
        }, 'store.lock', 60_000);
      }`;
    await Promise.all(Array.from({ length: 12 }, () => execa(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, dir, counter], { cwd: ROOT })));
    expect(Number(readFileSync(counter, 'utf8'))).toBe(300);
    expect(existsSync(join(dir, 'store.lock'))).toBe(true);
  });
});

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
}
