import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { fastFailConfig, runCli, waitFor } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { withLock } from '../../src/agent/state/lock.js';

/** The lock between the daemon and a manual sync, and the daemon's own signals. */
let sim: Simulator;
const running: DaemonProcess[] = [];
beforeAll(async () => {
  sim = await startSimulator({
    indicators: 2000,
    seed: 29,
    agentConfig: { maximum_rules: '200', score_threshold: '4', sync_time: '5', running: 'true', version: '0.1.0' },
  });
});
afterAll(async () => {
  await sim?.close();
});
afterEach(async () => {
  sim.setFault(null);
  await Promise.all(running.splice(0).map((d) => d.stop()));
});
function start(path: string, env: Record<string, string> = {}): DaemonProcess {
  const d = new DaemonProcess(path, env);
  running.push(d);
  return d;
}

describe('the agent lock', () => {
  /** The daemon's first cycle held open by a slow agent-record answer, with the agent lock held; resolves once it holds it. */
  async function daemonInsideACycle(delayMs = 60_000) {
    const cfg = fastFailConfig(sim, { request_timeout_ms: 60_000 });
    sim.setFault('slow', { routes: ['GET /feedback'], delayMs });
    const d = start(cfg.path, { WCF_AGENT_MINUTE_MS: '60000' }); // cycles every 5 minutes
    const lockHolder = async () => (JSON.parse((await runCli(['status', '--json', '--config', cfg.path])).stdout) as { lock_holder: number | null }).lock_holder;
    await waitFor(async () => (await lockHolder()) === d.pid, 'the daemon to take the lock');
    return { cfg, d, lock: join(cfg.state, 'agent.lock'), lockHolder };
  }

  it('sync --once while the daemon is inside a cycle exits 4 naming the daemon PID (and --json prints one object)', async () => {
    const { cfg, d, lock } = await daemonInsideACycle();
    const plain = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(plain.exitCode).toBe(4);
    expect(plain.stderr).toContain(`another wcf-agent (pid ${d.pid}) holds ${lock}`);
    const json = await runCli(['sync', '--once', '--json', '--config', cfg.path]);
    expect(json.exitCode).toBe(4);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, code: 40, error: 'WCF_ERR_STATE', message: expect.stringContaining(`pid ${d.pid}`) });
    expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(d.pid); // the daemon's lock is left alone
  });

  it('sync --once from another PID namespace (a container on the same state dir) while the daemon is inside a cycle: refused, nothing removed, the cycle completes', async () => {
    // The held answer comes after 15 s: the cycle then completes, under the lock it never lost.
    const { cfg, d, lock, lockHolder } = await daemonInsideACycle(15_000);
    const before = readdirSync(cfg.state).sort();
    const r = await runCli(['sync', '--once', '--config', cfg.path], {}, ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child']);
    expect(r.exitCode, r.stderr).toBe(4);
    expect(r.stderr).toMatch(new RegExp(`another wcf-agent \\(pid ${d.pid} in another PID namespace: pid:\\[\\d+\\]\\) holds ${lock.replace(/[.]/g, '\\.')}`));
    expect(readdirSync(cfg.state).sort()).toEqual(before);
    expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(d.pid);
    expect(await lockHolder()).toBe(d.pid);
    expect(d.count(/^cycle done/)).toBe(0);
    await d.waitForLog(/^cycle done/, 1, 60_000);
    expect(d.count(/cycle skipped/)).toBe(0);
  });

  it('without util-linux\'s flock on PATH, sync and run fail at once naming it (exit 4), rather than run unlocked', async () => {
    const cfg = fastFailConfig(sim);
    const env = { PATH: '/usr/sbin:/sbin' }; // flock (and setpriv) live in /usr/bin
    const before = sim.requests.length;
    for (const args of [['sync', '--once'], ['run']]) {
      const r = await runCli([...args, '--config', cfg.path], env);
      expect(r.exitCode, args.join(' ')).toBe(4);
      expect(r.stderr).toMatch(/cannot lock \S+\/(agent\.lock|daemon\.pid): flock \(util-linux\) is not installed/);
    }
    expect(sim.requests.slice(before)).toHaveLength(0); // nothing asked of the API either
  });

  it('the daemon skips a cycle while another live process holds the lock, and syncs once it is released', async () => {
    const cfg = fastFailConfig(sim);
    const first = start(cfg.path);
    await first.waitForLog(/^cycle done/);
    expect(await first.stop()).toBe(0);
    // This test process holds the lock (it is not the daemon) until `release` is called.
    let release!: () => void;
    const held = withLock(cfg.state, () => new Promise<void>((r) => (release = r)));
    await waitFor(() => release !== undefined, 'the test to hold the lock');
    const d = start(cfg.path);
    const skipped = await d.waitForLog(/^cycle skipped/);
    expect(skipped.msg).toContain(`another wcf-agent (pid ${process.pid})`);
    expect(d.count(/^cycle done/)).toBe(0);
    release();
    await held;
    await d.waitForLog(/^cycle done/);
  });
});

describe('signals belong to the daemon', () => {
  it('one SIGHUP gives exactly one reload and one cycle, from the first signal on; one SIGTERM one stop', async () => {
    const cfg = fastFailConfig(sim);
    const d = start(cfg.path, { WCF_AGENT_MINUTE_MS: '60000' }); // sync_time 5: no scheduled cycle during the test
    await d.waitForLog(/^cycle done/);
    const configCalls = () => sim.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/feedback')).length;
    const before = configCalls();
    d.signal('SIGHUP');
    await d.waitForLog(/^configuration reloaded/);
    await d.waitForLog(/^cycle done/, 2);
    expect(await d.stop()).toBe(0);
    expect(d.count(/^reloading config\.json/)).toBe(1);
    expect(d.count(/^configuration reloaded/)).toBe(1);
    expect(d.count(/^cycle done/)).toBe(2);
    expect(d.count(/^stopping$/)).toBe(1);
    expect(configCalls() - before).toBe(1);
  });
});
