import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { largeSetLab, type LargeSetLab } from '../helpers/large-set.js';

/**
 * Knowing the kernel never costs the host, at 100,000 entries: a flood of scrapes and readiness
 * probes starts no kernel read per request (the drop counters come from one small set, read once
 * for every scrape in flight; readiness from what the watcher found), and another tool changing
 * the ruleset every second never makes the agent list its table or its sets, only check them,
 * no more often than the checks take. Every nft the daemon runs goes through an `nft` first on
 * PATH that writes its arguments to a file; the daemon's children are counted every 200 ms.
 */

const SIZE = 100_000;
let lab: LargeSetLab;
let d: DaemonProcess | undefined;

beforeAll(async () => {
  lab = await largeSetLab(SIZE, 9, 1);
});
afterAll(async () => {
  await d?.stop();
  await lab?.close();
});

/** Descendants of `pid` now (from /proc), as `pid comm`. */
function descendants(pid: number): string[] {
  const parent = new Map<number, number>();
  const name = new Map<number, string>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'latin1');
      const close = stat.lastIndexOf(')');
      parent.set(Number(e), Number(stat.slice(close + 2).split(' ')[1]));
      name.set(Number(e), stat.slice(stat.indexOf('(') + 1, close));
    } catch {
      // gone meanwhile
    }
  }
  const out: string[] = [];
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    for (const [c, pp] of parent) if (pp === p) {
      out.push(`${c} ${name.get(c)}`);
      stack.push(c);
    }
  }
  return out;
}

describe('the cost of knowing the kernel at 100,000 entries', () => {
  it('scrape and readiness floods, then another tool’s rule a second: no listing of the agent’s table or sets, bounded children, cycles that finish', { timeout: 300_000 }, async () => {
    const calls = join(lab.dir('wcf-calls-'), 'calls');
    writeFileSync(calls, '');
    const path = await lab.nftShim(`echo "$*" >>'${calls}'`);
    const { sim, ns } = lab;
    const cfg = writeConfig({
      agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, jitter_seconds: 0, plugin: 'nftables', netns: ns.name,
      metrics_listen: '127.0.0.1:0', decision_poll_seconds: 0, watch_interval_seconds: 1, startup_delay_seconds: 0,
    });
    // One minute is 10 s here: a cycle every 10 s after the last ended.
    d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '10000', PATH: path });
    const base = /(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec((await d.waitForLog(/^metrics listening on /)).msg)![1]!;
    await d.waitForLog(/^cycle done/, 1, 120_000);
    const nftCalls = () => readFileSync(calls, 'utf8').split('\n').filter(Boolean);
    /** A listing of the agent's own table or of its big sets: what must never run here. */
    const bigReads = () => nftCalls().filter((c) => / list (table inet wcf_agent|set inet wcf_agent wcf-blocklist(-nets)?)$/.test(c) || / list (ruleset|tables|counters?|chain inet)/.test(c));
    expect(bigReads(), 'the first cycle, a fresh start with no table, reads nothing back').toEqual([]);

    // The floods: 60 clients at once (the listener takes at most 64), each asking /metrics or /readyz, fifteen rounds.
    let peakChildren = 0;
    let peakNames: string[] = [];
    const sampler = setInterval(() => { const x = descendants(d!.pid); if (x.length > peakChildren) { peakChildren = x.length; peakNames = x; } }, 200);
    const before = nftCalls().length;
    const answers: number[] = [];
    const clients = new Agent({ connections: 60 });
    for (let round = 0; round < 15; round++) {
      const all = await Promise.all(
        Array.from({ length: 60 }, async (_, i) => {
          // Sixty clients: at most sixty connections, each body read to its end as Prometheus does.
          const res = await fetch(`${base}${i % 2 ? '/readyz' : '/metrics'}`, { dispatcher: clients });
          await res.arrayBuffer();
          return res.status;
        }),
      );
      answers.push(...all);
    }
    clearInterval(sampler);
    await clients.close();
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    const duringFloods = nftCalls().slice(before);
    // 900 requests: the drop counters read from the small drops set at most once a second (shared
    // by every scrape in flight), never the table; readiness reads nothing.
    expect(duringFloods.filter((c) => / list /.test(c) && !/ list set inet wcf_agent wcf-blocklist-(drops|in|out)$| list chains$/.test(c))).toEqual([]);
    expect(duringFloods.length).toBeLessThan(60);
    // The event source, a verification's two checks at once, a probe and the counters' read at
    // most: never a child per request.
    expect(peakChildren, peakNames.join(', ')).toBeLessThanOrEqual(5);

    // Another tool changes its own table every second for three cycles.
    await ns.exec('nft', ['-f', '-'], 'add table inet foreign\nadd chain inet foreign c\n');
    const churnFrom = nftCalls().length;
    const cycles = d.count(/^cycle done/);
    let stop = false;
    let changes = 0;
    const loop = (async () => {
      while (!stop) {
        await ns.exec('nft', ['add', 'rule', 'inet', 'foreign', 'c', 'counter']);
        changes++;
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    await d.waitForLog(/^cycle done/, cycles + 3, 120_000);
    stop = true;
    await loop;
    const churn = nftCalls().slice(churnFrom);
    expect(bigReads().length, 'no listing of the agent’s table or sets under churn').toBe(0);
    // Each of the other tool's transactions is checked, but not each on its own: checks are spaced
    // by at least 2 s (one check is 5 slices of 20,000 elements).
    const checks = churn.filter((c) => c === '-c -f -').length;
    expect(changes).toBeGreaterThan(10);
    expect(checks).toBeGreaterThan(0);
    // Per 2 s of churn at most one verification (six check runs: five slices of the addresses, one
    // of the networks), plus at most one probe per change (two check runs: the table's sets and
    // rules, then the objects past its last rule).
    expect(checks).toBeLessThanOrEqual((changes / 2 + 2) * 6 + 2 * changes);
    // Every cycle of the three ended ok, and nothing was repaired (nothing of the agent's was touched).
    const done = d.logs.filter((l) => /^cycle done/.test(l.msg)).slice(-3);
    expect(done).toHaveLength(3);
    expect(d.count(/put back with the last applied set/)).toBe(0);
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, 'ready after the churn', 10_000);
    expect(await d.stop()).toBe(0);
    d = undefined;
  });
});
