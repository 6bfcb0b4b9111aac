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
 * PATH records its start, holds until the test removes a gate file, then records
 * its end: the signal provably lands while the command runs. No real command runs.
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

  it('exits 0 (not killed by its own re-raised signal), the command still running when the signal landed', async () => {
    const cfg = fastFailConfig(sim, { netns: 'wcf-no-such-ns' });
    dir = cfg.dir;
    const bin = join(cfg.dir, 'bin');
    const calls = join(cfg.dir, 'ip-calls');
    const gate = join(cfg.dir, 'gate');
    mkdirSync(bin);
    writeFileSync(join(bin, 'ip'), `#!/bin/sh\necho "start $$ $*" >> '${calls}'\nwhile [ -e '${gate}' ]; do sleep 0.05; done\necho "end $$" >> '${calls}'\necho '[]'\n`);
    chmodSync(join(bin, 'ip'), 0o755);
    writeFileSync(gate, '');
    const read = () => (existsSync(calls) ? readFileSync(calls, 'utf8') : '');
    const d = new DaemonProcess(cfg.path, { PATH: `${bin}:${process.env.PATH ?? ''}` });
    try {
      const started = await waitFor(() => /^start (\d+) .*-n wcf-no-such-ns/m.exec(read()), 'the fake ip to be called', 20_000);
      const pid = started[1]!;
      d.signal('SIGTERM');
      await d.waitForLog(/^stopping$/);
      expect(read(), 'the command had not ended when the signal landed').not.toMatch(new RegExp(`^end ${pid}$`, 'm'));
      rmSync(gate);
      expect(await d.exit(), d.raw.slice(-10).join('\n')).toBe(0);
      expect(d.count(/^stopped$/)).toBe(1);
    } finally {
      rmSync(gate, { force: true });
      await d.stop();
    }
  });
});
