import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { previousReleaseTable, v01Table } from '../fixtures/earlier-tables.js';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { DatagramStream, type WindowCount } from '../helpers/datagrams.js';
import { kernelEntries, untilTwoAgree } from '../helpers/kernel.js';
import { toCidr } from '../../src/net/ipv4.js';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { createLab, isRoot, type Lab } from '../netns/netns.js';

/**
 * Make before break, proved with packets at 100,000 entries: while the agent re-lays, repairs,
 * rebuilds or restarts, a peer sends a datagram every 5 ms from each of 100 blocked addresses and
 * 50 addresses inside blocked networks (and from allowed ones, to show the stream flows), and not
 * one from a blocked source may arrive. Each change starts from a steady kernel; the kernel holds
 * exactly the selection after it.
 */

const SIZE = 100_000;
let sim: Simulator;
let lab: Lab;
let stream: DatagramStream;
let cfg: { path: string; dir: string };
let base: Record<string, unknown>;
let selection: string[];
let d: DaemonProcess | undefined;

/** The config with `extra` over the base, written where the agent reads it (a SIGHUP reads it again). */
function config(extra: Record<string, unknown> = {}): void {
  writeFileSync(cfg.path, JSON.stringify({ state_dir: 'state', ...base, ...extra }), { mode: 0o600 });
}

async function sync(): Promise<void> {
  const r = await runCli(['sync', '--once', '--config', cfg.path]);
  expect(r.exitCode, r.stderr.slice(-2000)).toBe(0);
}

/** The kernel's two sets, read until two listings agree (a listing just after a big write can miss elements). */
const kernel = () => untilTwoAgree(() => kernelEntries(lab.host, 'nftables'), (l) => l.length);

function expectNothingThrough(w: WindowCount, what: string): void {
  expect([...w.through], `datagrams from blocked sources during ${what}`).toEqual([]);
  expect(w.allowed, `datagrams from allowed sources during ${what} (the stream flowed)`).toBeGreaterThan(0);
}

/** Replace the agent's table with `script` (outside any window), and wait until it drops everything again. */
async function replaceTable(script: string): Promise<void> {
  await lab.host.exec('nft', ['-f', '-'], `add table inet wcf_agent\ndelete table inet wcf_agent\n${script}`);
  await waitFor(async () => (await stream.during(async () => undefined, 200)).through.size === 0, 'the replaced table drops', 10_000, 0);
}

beforeAll(async () => {
  if (!isRoot) throw new Error('these tests need root (network namespaces)');
  sim = await startSimulator({
    indicators: Math.round(SIZE * 1.2),
    seed: 11,
    now: Math.floor(Date.now() / 1000) + 30 * 86_400,
    agentConfig: { maximum_rules: String(SIZE), score_threshold: '1', sync_time: '600', running: 'true' },
  });
  lab = await createLab();
  base = { agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, plugin: 'nftables', netns: lab.host.name, decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0, jitter_seconds: 0 };
  cfg = writeConfig(base);
  await sync();
  selection = await kernel();
  expect(selection.length).toBeGreaterThan(SIZE * 0.9);
  // Sources: single addresses and an address inside each of some networks, spread over the set.
  const hosts = selection.filter((c) => !c.includes('/'));
  const nets = selection.filter((c) => c.includes('/') && Number(c.split('/')[1]) <= 30);
  const pick = <T,>(l: readonly T[], n: number) => Array.from({ length: n }, (_, i) => l[Math.floor((i * l.length) / n)]!);
  const inside = (net: string) => {
    const [a, b, c, x] = net.split('/')[0]!.split('.').map(Number) as [number, number, number, number];
    return `${a}.${b}.${c}.${x + 1}`;
  };
  const blocked = [...pick(hosts, 100), ...pick(nets, 50).map(inside)];
  // Allowed sources: from a range the feed never lists (the simulator draws public unicast space).
  const allowed = Array.from({ length: 10 }, (_, i) => `100.64.9.${i + 1}`);
  stream = await DatagramStream.start(lab, blocked, allowed, 5);
  expectNothingThrough(await stream.during(async () => undefined, 500), 'the steady state');
}, 300_000);

afterAll(async () => {
  await d?.stop();
  await stream?.stop();
  await lab?.destroy();
  await sim?.close();
});

describe('make before break at 100,000 entries: no datagram from a blocked source gets through', { timeout: 180_000 }, () => {
  it('another tool adds a chain to the agent’s table: removed in place', async () => {
    await lab.host.exec('nft', ['add', 'chain', 'inet', 'wcf_agent', 'intruder']);
    expectNothingThrough(await stream.during(sync), 'the repair');
    expect(await lab.host.exec('nft', ['list', 'chains', 'inet'])).not.toMatch(/chain intruder/);
    expect(await kernel()).toEqual(selection);
  });

  it('log_blocked turned on, then off: the chains laid out again in place', async () => {
    config({ log_blocked: true });
    expectNothingThrough(await stream.during(sync), 'log_blocked on');
    expect(await lab.host.exec('nft', ['list', 'chain', 'inet', 'wcf_agent', 'prerouting'])).toMatch(/log prefix "wcf-agent: "/);
    config();
    expectNothingThrough(await stream.during(sync), 'log_blocked off');
    expect(await kernel()).toEqual(selection);
  });

  it('direction inbound, then both again', async () => {
    config({ direction: 'inbound' });
    expectNothingThrough(await stream.during(sync), 'direction inbound');
    config();
    expectNothingThrough(await stream.during(sync), 'direction both');
    expect(await kernel()).toEqual(selection);
  });

  it('an upgrade from the previous release (its table, state dir and config as they were)', async () => {
    await replaceTable(previousReleaseTable(selection.filter((c) => !c.includes('/')), selection.filter((c) => c.includes('/'))));
    expectNothingThrough(await stream.during(sync), 'the upgrade');
    expect(await kernel()).toEqual(selection);
  });

  it('an upgrade from 0.1, whose set has another type: built again beside a shadow table', async () => {
    // One interval set takes no overlaps: the addresses inside a listed network are blocked by it.
    const nets = selection.filter((c) => c.includes('/')).map((c) => toCidr(c)!).sort((a, b) => a.start - b.start);
    const covered = (c: string) => {
      const a = toCidr(c)!.start;
      let lo = 0;
      let hi = nets.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (nets[mid]!.start <= a) lo = mid;
        else hi = mid - 1;
      }
      return nets[lo] !== undefined && nets[lo]!.start <= a && a <= nets[lo]!.end;
    };
    await replaceTable(v01Table(selection.filter((c) => c.includes('/') || !covered(c))));
    expectNothingThrough(await stream.during(sync), 'the rebuild');
    expect(await lab.host.exec('nft', ['list', 'tables'])).not.toMatch(/wcf_agent_next/);
    expect(await kernel()).toEqual(selection);
  });

  it('the daemon: a repair by its watcher, a reload after SIGHUP, a restart', async () => {
    const start = async () => {
      const p = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000' });
      await p.waitForLog(/^cycle done/, 1, 120_000);
      return p;
    };
    d = await start();
    // The first cycle has ended: what another tool does next is the watcher's to repair.
    await d.waitForLog(/^watching the agent’s firewall objects between cycles$/, 1, 60_000);
    const repaired = d.count(/put back with the last applied set/);
    expectNothingThrough(
      await stream.during(async () => {
        await lab.host.exec('nft', ['add', 'chain', 'inet', 'wcf_agent', 'intruder']);
        await d!.waitForLog(/put back with the last applied set/, repaired + 1, 60_000).catch((err: unknown) => {
          throw new Error(`${String(err)}\n${d!.raw.slice(-15).join('\n')}`);
        });
      }),
      'the watcher’s repair',
    );
    config({ log_blocked: true });
    const cycles = d.count(/^cycle done/);
    expectNothingThrough(
      await stream.during(async () => {
        process.kill(d!.pid, 'SIGHUP');
        await d!.waitForLog(/^cycle done/, cycles + 1, 120_000);
      }),
      'the reload',
    );
    expectNothingThrough(
      await stream.during(async () => {
        expect(await d!.stop()).toBe(0);
        d = await start();
      }),
      'the restart',
    );
    expect(await d.stop()).toBe(0);
    d = undefined;
    expect(await kernel()).toEqual(selection);
  });
});
