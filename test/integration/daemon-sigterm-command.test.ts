import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';

/**
 * SIGTERM while the daemon waits on a command it runs (here `ip`, which the
 * protected set runs for a `netns`): the daemon still stops cleanly (exit 0,
 * "stopped"), not killed by its own re-raised signal. A fake `ip` first on
 * PATH records the call and holds it open; no real command runs.
 */
describe('daemon: SIGTERM while a command runs', () => {
  let sim: Simulator;
  let dir: string | undefined;

  beforeAll(async () => {
    sim = await startSimulator({ indicators: 50, seed: 29 });
  });
  afterAll(async () => {
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0 (not killed by its own re-raised signal)', async () => {
    const cfg = fastFailConfig(sim, { netns: 'wcf-no-such-ns' });
    dir = cfg.dir;
    const bin = join(cfg.dir, 'bin');
    const calls = join(cfg.dir, 'ip-calls');
    mkdirSync(bin);
    writeFileSync(join(bin, 'ip'), `#!/bin/sh\necho "$@" >> '${calls}'\nsleep 3\necho '[]'\n`);
    chmodSync(join(bin, 'ip'), 0o755);
    const d = new DaemonProcess(cfg.path, { PATH: `${bin}:${process.env.PATH ?? ''}` });
    try {
      await waitFor(() => existsSync(calls) && readFileSync(calls, 'utf8').includes('-n wcf-no-such-ns'), 'the fake ip to be called', 20_000);
      d.signal('SIGTERM');
      expect(await d.exit(), d.raw.slice(-10).join('\n')).toBe(0);
    } finally {
      await d.stop();
    }
  });
});
