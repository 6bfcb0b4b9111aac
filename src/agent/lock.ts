import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../errors.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One cycle at a time per state dir (a manual `sync --once` while the daemon
 * runs would otherwise race it). A lock left by a dead process is taken over.
 */
export async function withLock<T>(stateDir: string, fn: () => Promise<T>): Promise<T> {
  const path = join(stateDir, 'agent.lock');
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) {
        throw new StateError(`cannot take the lock ${path}: ${(err as Error).message}`, { cause: err });
      }
      const holder = Number(readFileSync(path, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new StateError(`another wcf-agent (pid ${holder}) holds ${path}; is the daemon running?`);
      }
      unlinkSync(path);
    }
  }
  try {
    return await fn();
  } finally {
    try {
      unlinkSync(path);
    } catch {
      /* already removed */
    }
  }
}
