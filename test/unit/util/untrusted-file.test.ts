import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { StateStore } from '../../../src/agent/state/store.js';

/** Special files where state files belong: never followed, never blocked on, never quoted. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function stateDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'wcf-statefile-'));
  dirs.push(d);
  return d;
}
function capture() {
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => lines.push(s) });
  return { logger, text: () => lines.join('') };
}

describe('state files', () => {
  it('a FIFO named like a state file is set aside at once (a read would block forever)', () => {
    const d = stateDir();
    execFileSync('mkfifo', [join(d, 'applied-dry-run.json'), join(d, 'state.json')]);
    const { logger, text } = capture();
    const s = new StateStore(d, logger);
    expect(s.small).toEqual({});
    expect(s.loadApplied('dry-run')).toBeUndefined();
    expect(text()).toMatch(/state\.json.*is not a regular file \(a FIFO\); set aside/);
    expect(text()).toMatch(/applied-dry-run\.json.*is not a regular file \(a FIFO\); set aside/);
    expect(existsSync(join(d, 'applied-dry-run.json'))).toBe(false);
    expect(readdirSync(d).filter((f) => f.includes('.corrupt-'))).toHaveLength(2);
  });

  it('a symlink to a secret is not followed: nothing of the secret is logged, and writing replaces the link, not the secret', () => {
    const d = stateDir();
    const secret = join(d, 'secret');
    writeFileSync(secret, 'root:$y$SECRET-HASH:19000:0:99999:7:::\n');
    symlinkSync(secret, join(d, 'applied-dry-run.json'));
    symlinkSync(secret, join(d, 'state.json'));
    const { logger, text } = capture();
    const s = new StateStore(d, logger);
    expect(s.loadApplied('dry-run')).toBeUndefined();
    expect(text()).toMatch(/symbolic link/);
    expect(text()).not.toMatch(/SECRET|root:/);
    s.saveApplied({ ts: 1, plugin: 'dry-run', entries: [] });
    s.update({ cursor: 5 });
    expect(readFileSync(secret, 'utf8')).toBe('root:$y$SECRET-HASH:19000:0:99999:7:::\n');
    expect(lstatSync(join(d, 'applied-dry-run.json')).isFile()).toBe(true);
    expect(new StateStore(d, logger).small.cursor).toBe(5);
  });

  it('a file that is not JSON is set aside without quoting its content', () => {
    const d = stateDir();
    writeFileSync(join(d, 'applied-dry-run.json'), 'root:$y$SECRET-HASH\n');
    const { logger, text } = capture();
    expect(new StateStore(d, logger).loadApplied('dry-run')).toBeUndefined();
    expect(text()).toMatch(/not valid JSON/);
    expect(text()).not.toMatch(/SECRET|root:/);
  });

  it('state.json is written by the agent itself (no conf): update persists, a new store reads it back', () => {
    const d = stateDir();
    const { logger } = capture();
    const s = new StateStore(d, logger);
    s.update({ cursor: 42, lastFullPullAt: 7 });
    s.update({ cursor: 43 });
    expect(JSON.parse(readFileSync(join(d, 'state.json'), 'utf8'))).toEqual({ cursor: 43, lastFullPullAt: 7 });
    expect(lstatSync(join(d, 'state.json')).mode & 0o777).toBe(0o600);
    expect(new StateStore(d, logger).small).toEqual({ cursor: 43, lastFullPullAt: 7 });
    // Another process (a manual sync) writes the file: refresh() sees it.
    new StateStore(d, logger).update({ cursor: 99 });
    expect(s.small.cursor).toBe(43);
    s.refresh();
    expect(s.small).toEqual({ cursor: 99, lastFullPullAt: 7 });
  });
});
