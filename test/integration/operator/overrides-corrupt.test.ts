import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { fastFailConfig, runCli } from '../../helpers/cli.js';

/**
 * An overrides.json that is not JSON (a bad hand edit, a disk error): the cycle fails and keeps
 * the applied set, and `sync` and `status` name the file and where it breaks, never its content
 * (status and every cycle's log would otherwise repeat whatever the file holds).
 */

let sim: Simulator;
const dirs: string[] = [];
beforeAll(async () => {
  sim = await startSimulator({ indicators: 50, seed: 61 });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('a corrupt overrides.json', () => {
  it('sync fails naming the file and the spot; neither sync nor status quotes it', async () => {
    const cfg = fastFailConfig(sim);
    dirs.push(cfg.dir);
    expect((await runCli(['sync', '--once', '--config', cfg.path])).exitCode).toBe(0);
    writeFileSync(join(cfg.state, 'overrides.json'), '{"version":1,\n "overrides":[ SECRET-TEXT \x1b]0;t\x07 ]}', { mode: 0o600 });
    const sync = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(sync.exitCode).not.toBe(0);
    expect(sync.stderr).toContain(`cannot use ${join(cfg.state, 'overrides.json')}: not valid JSON at line 2, column 16 (fix or remove the file)`);
    const status = await runCli(['status', '--config', cfg.path]);
    expect(status.stdout + status.stderr).toContain('not valid JSON at line 2, column 16');
    for (const out of [sync.stdout, sync.stderr, status.stdout, status.stderr]) {
      expect(out).not.toContain('SECRET');
      expect(out).not.toContain('\x1b');
    }
  });
});
