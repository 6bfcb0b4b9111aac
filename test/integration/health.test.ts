import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { isRoot, Netns } from '../netns/netns.js';

/**
 * /healthz and /readyz on the metrics listener of `wcf-agent run`, and `status --probe`,
 * with the rules in a test namespace (config `netns`). The daemon runs with 100 ms
 * minutes (the test helper's default), so its wedged-cycle limit is
 * cycle_deadline_seconds (10, the least allowed) plus one second.
 */

let sim: Simulator;
let ns: Netns;
const running: DaemonProcess[] = [];
const cleanup: (() => void)[] = [];

beforeAll(async () => {
  if (!isRoot) throw new Error('the health tests need root (network namespaces)');
  sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: '50', score_threshold: '4', sync_time: '600', running: 'true' } });
  for (let i = 1; i <= 20; i++) sim.upsertIndicator({ ip: `203.0.113.${i}`, score: 9 });
  ns = await Netns.create();
});
afterEach(async () => {
  // A hanging tool first: the daemon's stop waits for the apply in flight.
  for (const f of cleanup.splice(0)) f();
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await ns.exec('nft', ['flush', 'ruleset']);
});
afterAll(async () => {
  await ns?.destroy();
  await sim?.close();
});

async function start(extra: Record<string, unknown> = {}, env: Record<string, string> = {}) {
  const cfg = writeConfig({
    agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
    metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, cycle_deadline_seconds: 10, ...extra,
  });
  const d = new DaemonProcess(cfg.path, env);
  running.push(d);
  const base = /(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]!;
  const get = async (path: string) => {
    const r = await fetch(`${base}${path}`);
    return { status: r.status, text: (await r.text()).trim() };
  };
  return { d, cfg, get };
}

describe('health endpoints of `run`', () => {
  it('enforcing: /healthz and /readyz answer 200, status --probe exits 0; the table removed: /readyz 503 naming it, status --probe 4', async () => {
    // No watcher, so the removed table stays removed while the probes look.
    const { d, cfg, get } = await start({ watch_interval_seconds: 0 });
    await d.waitForLog(/^cycle done/);
    expect(await get('/healthz')).toMatchObject({ status: 200, text: expect.stringMatching(/^alive: next cycle in /) });
    expect(await get('/readyz')).toMatchObject({ status: 200, text: expect.stringMatching(/^ready: nftables enforcing the last applied set \(20 entries\); last look [\d.]+ s ago: the last apply wrote the whole set$/) });
    const probe = await runCli(['status', '--probe', '--config', cfg.path]);
    expect(probe.exitCode, probe.stderr).toBe(0);
    expect(probe.stdout).toMatch(/^ready: enforcing, (20|\?) entries in the kernel$/);

    await ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
    // Without a watcher the objects are read for readiness at most once a second (one read shared by every request).
    let ready = await get('/readyz');
    const until = Date.now() + 5000;
    while (ready.status === 200 && Date.now() < until) ready = await get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.text).toMatch(/^not ready: nft table inet wcf_agent absent/);
    expect(ready.text.split('\n')).toHaveLength(1);
    expect((await get('/healthz')).status).toBe(200);
    const down = await runCli(['status', '--probe', '--config', cfg.path]);
    expect(down.exitCode).toBe(4);
    expect(down.stdout).toBe("not ready: none of the agent's objects is in the kernel (flushed, or never synced)");
  });

  it('API down and nothing to restore: alive, not ready', async () => {
    const { d, get } = await start({ base_url: 'http://127.0.0.1:9/api/v1' });
    await d.waitForLog(/^sync failed/);
    expect((await get('/healthz')).status).toBe(200);
    expect(await get('/readyz')).toEqual({ status: 503, text: 'not ready: no set applied yet (nothing to restore, first sync pending)' });
    expect((await get('/metrics')).status).toBe(200);
  });

  it('a wedged loop (a firewall tool that never returns) answers 503 on /healthz', async () => {
    // nft that hangs on every apply (`nft -f`), the real one otherwise; it records its PID to be killed after.
    const dir = mkdtempSync(join(tmpdir(), 'wcf-hang-'));
    const pids = join(dir, 'pids');
    writeFileSync(join(dir, 'nft'), `#!/bin/sh\ncase " $* " in *" -f "*) echo $$ >>'${pids}'; exec sleep 600;; esac\nexec /usr/sbin/nft "$@"\n`, { mode: 0o755 });
    cleanup.push(() => {
      for (const pid of readFileSync(pids, 'utf8').split('\n').filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    });
    const { get } = await start({}, { PATH: `${dir}:${process.env.PATH}` });
    await waitFor(() => readFileSync(pids, { encoding: 'utf8', flag: 'a+' }).trim().length > 0, 'the apply to hang');
    expect(await get('/healthz')).toMatchObject({ status: 200, text: expect.stringMatching(/^alive: a cycle is running/) });
    const wedged = await waitFor(async () => {
      const r = await get('/healthz');
      return r.status === 503 ? r : undefined;
    }, '/healthz to answer 503', 30_000, 250);
    expect(wedged.text).toMatch(/^wedged: a cycle has been running for \d+(\.\d)? s \(limit 11 s\)$/);
    expect((await get('/readyz')).status).toBe(503);
  });
});
