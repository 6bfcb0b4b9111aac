import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { isRoot, Netns } from '../netns/netns.js';

/**
 * `wcf-agent run` out of file descriptors: its limit lowered with prlimit to a few above what
 * it holds, then idle connections to its metrics listener take the rest. A reload (which
 * restarts the firewall event source) and a deleted table follow: every command the daemon
 * starts then fails, and it must log those failures and keep running, then put the table
 * back once the connections are gone.
 */

let sim: Simulator;
let ns: Netns;
const running: DaemonProcess[] = [];

beforeAll(async () => {
  if (!isRoot) throw new Error('the descriptor tests need root (network namespaces, prlimit on the daemon)');
  sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: '50', score_threshold: '4', sync_time: '600', running: 'true' } });
  for (let i = 1; i <= 20; i++) sim.upsertIndicator({ ip: `203.0.113.${i}`, score: 9 });
  ns = await Netns.create();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await ns.exec('nft', ['flush', 'ruleset']);
});
afterAll(async () => {
  await ns?.destroy();
  await sim?.close();
});

const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/**
 * `size` idle connections to `port`, each opened again as soon as the daemon closes it (it
 * closes silent ones at its headers deadline, or at once when it is out of descriptors), so
 * the daemon's free descriptors are taken as fast as they come back.
 */
function hold(port: number, size: number): { stop(): void } {
  let on = true;
  const all = new Set<Socket>();
  const one = (): void => {
    if (!on) return;
    const s = connect(port, '127.0.0.1');
    all.add(s);
    s.on('error', () => undefined);
    s.on('close', () => {
      all.delete(s);
      setImmediate(one);
    });
  };
  for (let i = 0; i < size; i++) one();
  return {
    stop() {
      on = false;
      for (const s of all) s.destroy();
    },
  };
}

const tablePresent = async () => (await ns.exec('nft', ['list', 'table', 'inet', 'wcf_agent']).then(() => true, () => false));
/** Addresses in the agent's set (0 when the table is absent). */
const setEntries = async () => (await ns.exec('nft', ['list', 'set', 'inet', 'wcf_agent', 'wcf-blocklist']).then((out) => out.match(/203\.0\.113\.\d+/g)?.length ?? 0, () => 0));
/** A command that could not be started, as the daemon logs it. */
const EMFILE = /(command failed|cannot lock) .*: could not be started: the agent has too many open files \(EMFILE\)|^nft monitor stopped \(spawn \S+ EMFILE\)/;

describe('`run` out of file descriptors', () => {
  it('fails the commands it cannot start, logs them, keeps running, and repairs the deleted table once descriptors are back', async () => {
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
      metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, watch_interval_seconds: 1,
    });
    const d = new DaemonProcess(cfg.path);
    running.push(d);
    const port = Number(/http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]);
    await d.waitForLog(/^cycle done/);
    await d.waitForLog(/^watching the agent’s firewall objects/);
    expect(await setEntries()).toBe(20);

    // Thirty idle connections held (fewer than the listener's cap), then the limit set two above
    // what the daemon holds: enough to read a file, not for the pipes of a child (six or more).
    const before = fds(d.pid);
    const flood = hold(port, 30);
    try {
      await waitFor(() => fds(d.pid) >= before + 30, 'the daemon to hold the connections', 10_000, 20);
      const limit = fds(d.pid) + 2;
      await execa('prlimit', ['--pid', String(d.pid), `--nofile=${limit}:${limit}`]);
      // The reload restarts the event source and starts a cycle: neither can start its commands now.
      d.signal('SIGHUP');
      await d.waitForLog(/^configuration reloaded/);
      const failed = await d.waitForLog(EMFILE).catch((err: Error) => {
        throw new Error(`${err.message}\n${d.raw.slice(-15).map((l) => l.slice(0, 300)).join('\n')}`);
      });
      // A line the daemon logged (a crash's stack trace is not one: level 0). The event source's
      // restart is logged as information (it is retried), the skipped cycle as a warning.
      expect(failed.level, `not a log line of the daemon:\n${d.raw.slice(-12).join('\n')}`).toBeGreaterThanOrEqual(30);
      await ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
      // A repair is due; what tries it fails to start its commands, and says so.
      await d.waitForLog(EMFILE, d.count(EMFILE) + 1);
      expect(await tablePresent()).toBe(false);
      expect(process.kill(d.pid, 0)).toBe(true);
    } finally {
      flood.stop();
    }
    // Descriptors back: the table and its 20 entries return.
    const entries = await waitFor(async () => (await setEntries()) === 20, 'the table and its entries to be put back', 30_000, 200);
    expect(entries).toBe(true);
    expect(process.kill(d.pid, 0)).toBe(true);
    expect(d.signalled).toBeUndefined();
  });
});
