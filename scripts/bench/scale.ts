/**
 * The daemon at scale, nftables against ipset in the same run (issue: nftables at a million
 * entries). Per backend and size, one daemon (`wcf-agent run`, the systemd unit's environment,
 * every indicator selected) in the benchmark namespace:
 *
 * - `firstCycleMs`: the first cycle (full pull, the set created);
 * - `changedCycleMs`: the next cycle after 1% of the indicators changed at the API (their
 *   scores and stamps: the kernel sees about 1% of its entries updated or removed);
 * - `selfHealMs`: the agent's objects removed by another tool (nft: `nft delete table`; ipset:
 *   `ipset flush` of its set) until the watcher logs them put back;
 * - `reloadMs`: SIGHUP until "configuration reloaded" (sent while the daemon idles);
 * - `reloadBusyMs`: SIGHUP sent while the cycle it starts is in flight, until "configuration reloaded";
 * - `stopMs`: SIGTERM with that cycle in flight until the process has exited;
 * - `treePeakMB`: the agent and all its children (nft, ipset, iptables-restore, the event
 *   monitor) summed, sampled every 200 ms over the whole run: what the host pays;
 *   `agentPeakMB`: the agent's own VmHWM;
 * - `restoreMs`, `restartCycleMs`, `restartTreePeakMB`: the daemon started again over its state
 *   and its set (a restart, an upgrade): the restore before any network call, and the first
 *   cycle, the one that reads the kernel's set back.
 *
 * Then, for nftables, what the agent's set costs the host's other nft commands (`nft list
 * tables`, `nft list ruleset`, a rule added to another table, an element added to another
 * table's set), timed with /usr/bin/time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { execa } from 'execa';
import { agentCommand, unitEnvironment } from './daemon.js';
import type { BenchNetns } from './netns.js';
import { onExit } from './netns.js';
import { startSimulatorProcess, type SimProcess } from './simulator.js';
import { log } from './stats.js';

export interface ScaleFigure {
  size: number;
  plugin: 'nftables' | 'ipset';
  firstCycleMs: number;
  changed: number;
  changedCycleMs: number;
  /** The cycle after it, nothing changed at the API. */
  quietCycleMs: number;
  selfHealMs: number | null;
  reloadMs: number;
  reloadBusyMs: number;
  stopMs: number;
  treePeakMB: number;
  agentPeakMB: number;
  /** Peak of the children alone (sampled). */
  childrenPeakMB: number;
  /** The largest descendant at the children's peak: `name rss MB`. */
  largestChild: string;
  /** Started again with its state and its set in the kernel: start to "restored the last known good set". */
  restoreMs: number;
  /** The first cycle after that restart (a new process trusts no record: it reads the set back once). */
  restartCycleMs: number;
  /** Agent and children over the restart, from start to the end of that first cycle. */
  restartTreePeakMB: number;
  /** The restarted agent's own VmHWM at the end of that cycle. */
  restartAgentPeakMB: number;
  restartLargestChild: string;
  load: string;
}

export interface NftCostFigure {
  size: number;
  command: string;
  seconds: number;
  maxRssMB: number;
}

/** VmRSS (kB) of every process, and its parent. */
function processTable(): Map<number, { ppid: number; rssKB: number; name: string }> {
  const out = new Map<number, { ppid: number; rssKB: number; name: string }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const status = readFileSync(`/proc/${d}/status`, 'utf8');
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const rssKB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '?';
      out.set(Number(d), { ppid, rssKB, name });
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/**
 * Samples the summed RSS of `pid` and its descendants every `everyMs`; stop() answers the peaks (MB),
 * and which descendant was the largest at the children's peak (`name rss MB`), to say who paid.
 */
export function treeSampler(pid: number, everyMs = 200): { stop(): { treeMB: number; childrenMB: number; largestChild: string; peakChildren: number } } {
  let treeKB = 0;
  let peakChildren = 0;
  let childrenKB = 0;
  let largestChild = 'none';
  const sample = () => {
    const table = processTable();
    const kids = new Map<number, number[]>();
    for (const [p, v] of table) kids.set(v.ppid, [...(kids.get(v.ppid) ?? []), p]);
    let sum = 0;
    let count = -1; // the agent itself is not its own child
    let largest: { name: string; rssKB: number } | undefined;
    const stack = [pid];
    while (stack.length) {
      const p = stack.pop()!;
      const row = table.get(p);
      count++;
      sum += row?.rssKB ?? 0;
      if (row && p !== pid && (!largest || row.rssKB > largest.rssKB)) largest = row;
      stack.push(...(kids.get(p) ?? []));
    }
    treeKB = Math.max(treeKB, sum);
    peakChildren = Math.max(peakChildren, count);
    const children = sum - (table.get(pid)?.rssKB ?? 0);
    if (children > childrenKB && largest) largestChild = `${largest.name} ${((largest.rssKB * 1024) / 1e6).toFixed(0)} MB`;
    childrenKB = Math.max(childrenKB, children);
  };
  const timer = setInterval(sample, everyMs);
  sample();
  return {
    stop() {
      clearInterval(timer);
      return { treeMB: (treeKB * 1024) / 1e6, childrenMB: (childrenKB * 1024) / 1e6, largestChild, peakChildren };
    },
  };
}

type Rec = Record<string, unknown>;

interface Logged {
  child: ChildProcess;
  /** Resolves with the time (ms, performance.now) and the record of the next log line matching. */
  next(pattern: RegExp, timeoutMs?: number): Promise<{ at: number; rec: Rec }>;
  exited: Promise<number>;
  /** Every log message with its time. */
  lines: Array<{ at: number; msg: string }>;
}

function startLogged(configPath: string): Logged {
  const [cmd, args] = agentCommand('node', ['run', '--config', configPath]);
  const env = { ...process.env, ...unitEnvironment(), WCF_LOG_LEVEL: 'info', WCF_AGENT_MINUTE_MS: '2000' };
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const forget = onExit(() => child.kill('SIGKILL'));
  const waiters: Array<{ re: RegExp; resolve: (v: { at: number; rec: Rec }) => void }> = [];
  const lines: Array<{ at: number; msg: string }> = [];
  let tail = '';
  createInterface({ input: child.stderr! }).on('line', (line) => {
    tail = (tail + line + '\n').slice(-3000);
    let rec: Rec;
    try {
      rec = JSON.parse(line) as Rec;
    } catch {
      return;
    }
    const msg = String(rec.msg ?? '');
    const at = performance.now();
    lines.push({ at, msg });
    for (const w of [...waiters]) if (w.re.test(msg)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve({ at, rec });
    }
  });
  const exited = new Promise<number>((r) => child.once('exit', () => {
    forget();
    r(performance.now());
  }));
  return {
    child,
    exited,
    lines,
    next(re, timeoutMs = 900_000) {
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no log ${re} within ${timeoutMs} ms:\n${tail}`)), timeoutMs);
        waiters.push({ re, resolve: (v) => {
          clearTimeout(t);
          resolve(v);
        } });
        void exited.then(() => reject(new Error(`daemon exited waiting for ${re}:\n${tail}`)));
      });
    },
  };
}

/** 1% of the applied entries, as changed feed records (new score and stamp). */
function changes(stateDir: string, plugin: string, count: number): Array<{ ip: string; score: number; ts: number }> {
  const text = readFileSync(join(stateDir, `applied-${plugin}.json`), 'utf8');
  const ips: string[] = [];
  for (const m of text.matchAll(/"cidr":"([^"]+)"/g)) ips.push(m[1]!.endsWith('/32') ? m[1]!.slice(0, -3) : m[1]!);
  const step = Math.max(1, Math.floor(ips.length / count));
  const base = Math.floor(Date.now() / 1000);
  const out: Array<{ ip: string; score: number; ts: number }> = [];
  for (let i = 0, k = 0; i < ips.length && out.length < count; i += step, k++) out.push({ ip: ips[i]!, score: k % 2 === 0 ? 9.5 : 1.5, ts: base - 60 + Math.floor(k / 500) });
  return out;
}

const AHEAD_S = 30 * 86_400;

async function timed(ns: BenchNetns, args: string[], input?: string, okStderr?: RegExp): Promise<{ seconds: number; maxRssMB: number }> {
  const r = await execa('/usr/bin/time', ['-f', '%e %M', 'ip', 'netns', 'exec', ns.name, 'nft', ...args], { input, reject: false, stdout: 'ignore' });
  const m = /(\d+\.\d+) (\d+)\s*$/.exec(r.stderr);
  if (!m || (r.exitCode !== 0 && !okStderr?.test(r.stderr))) throw new Error(`nft ${args.join(' ')}: ${r.stderr.slice(-300)}`);
  return { seconds: Number(m[1]), maxRssMB: (Number(m[2]) * 1024) / 1e6 };
}

/** What the agent's set (in place in `ns`) costs other nft commands. */
export async function nftCost(ns: BenchNetns, size: number): Promise<NftCostFigure[]> {
  const out: NftCostFigure[] = [];
  const run = async (command: string, args: string[], input?: string, okStderr?: RegExp) => {
    const r = await timed(ns, args, input, okStderr);
    out.push({ size, command, ...r });
    log(`nft cost ${size}: ${command}: ${r.seconds.toFixed(2)} s, ${r.maxRssMB.toFixed(0)} MB`);
  };
  await run('nft list tables', ['list', 'tables']);
  await run('nft list ruleset', ['list', 'ruleset']);
  await run('a rule added to another table', ['-f', '-'], 'add table inet other\nadd chain inet other c { type filter hook input priority 10; }\nadd rule inet other c tcp dport 22 accept\n');
  await run('nft list table of another table', ['list', 'table', 'inet', 'other']);
  // nft 1.0.x reads every interval set on the host back before any `add element`: the agent's networks included.
  await run('an element added to another table\'s set', ['-f', '-'], 'add set inet other s { type ipv4_addr; }\nadd element inet other s { 192.0.2.1 }\n');
  // Answers "File exists" (exit 1) when the table is there: that is its point.
  await run('agent quick check (nft -c)', ['-c', 'create', 'table', 'inet', 'wcf_agent'], undefined, /File exists/);
  return out;
}

export async function benchScale(ns: BenchNetns, sizes: readonly number[], plugins: ReadonlyArray<'nftables' | 'ipset'>): Promise<{ figures: ScaleFigure[]; cost: NftCostFigure[] }> {
  const figures: ScaleFigure[] = [];
  const cost: NftCostFigure[] = [];
  for (const size of sizes) {
    for (const plugin of plugins) {
      await ns.reset();
      const sim: SimProcess = await startSimulatorProcess(size, 1, Math.floor(Date.now() / 1000) + AHEAD_S);
      const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-scale-'));
      const forget = onExit(() => rmSync(dir, { recursive: true, force: true }));
      try {
        await sim.setAgentConfig({ maximum_rules: size, score_threshold: 1, sync_time: 1 });
        const configPath = join(dir, 'config.json');
        const stateDir = join(dir, 'state');
        writeFileSync(configPath, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin, netns: ns.name, state_dir: stateDir, maximum_rules: size, score_threshold: 1, jitter_seconds: 0, watch_interval_seconds: 5 }));
        const d = startLogged(configPath);
        const sampler = treeSampler(d.child.pid!);
        const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
        const load0 = load();
        const firstCycleMs = Number((await d.next(/^cycle done$/)).rec.ms);
        // The next cycles come by themselves (sync time: one shortened minute, 2 s); change 1% first.
        const changed = changes(stateDir, plugin, Math.round(size / 100));
        await sim.upsert(changed);
        await d.next(/^cycle done$/); // may have pulled before the upsert ended
        const changedCycleMs = Number((await d.next(/^cycle done$/)).rec.ms);
        const quietMs = Number((await d.next(/^cycle done$/)).rec.ms); // nothing changed since
        // Self-heal: the objects removed by another tool.
        let selfHealMs: number | null = null;
        const removed = performance.now();
        if (plugin === 'nftables') await ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
        else await ns.exec('ipset', ['flush', 'wcf-blocklist']);
        try {
          const healed = await d.next(/put back with the last applied set|re-asserted the last applied set|have been re-created/, 120_000);
          selfHealMs = healed.at - removed;
          // Where the repair spent its time (the watcher logs its stages, ms).
          const { ms, waitMs, entriesMs, protectMs, applyMs } = healed.rec;
          log(`scale ${plugin} ${size}: repair stages ${JSON.stringify({ ms, waitMs, entriesMs, protectMs, applyMs })}`);
        } catch {
          selfHealMs = null;
        }
        const healLog = d.lines.filter((l) => l.at >= removed - 1000 && l.at <= removed + (selfHealMs ?? 120_000) + 1000).map((l) => `${((l.at - removed) / 1000).toFixed(2)} ${l.msg.slice(0, 100)}`);
        log(`scale ${plugin} ${size}: log around the self-heal:\n  ${healLog.join('\n  ')}`);
        await d.next(/^cycle done$/);
        // SIGHUP while idle (right after a cycle).
        let sent = performance.now();
        const reloaded = d.next(/^configuration reloaded$/);
        d.child.kill('SIGHUP');
        const reloadMs = (await reloaded).at - sent;
        // The reload starts a cycle at once: SIGHUP again with it in flight, then SIGTERM.
        await new Promise((r) => setTimeout(r, 300));
        sent = performance.now();
        const reloaded2 = d.next(/^configuration reloaded$/);
        d.child.kill('SIGHUP');
        const reloadBusyMs = (await reloaded2).at - sent;
        const agentPeakMB = (Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${d.child.pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024) / 1e6;
        await new Promise((r) => setTimeout(r, 300));
        sent = performance.now();
        d.child.kill('SIGTERM');
        const stopMs = (await d.exited) - sent;
        const stopLog = d.lines.filter((l) => l.at >= sent - 2000).map((l) => `${((l.at - sent) / 1000).toFixed(2)} ${l.msg.slice(0, 100)}`);
        log(`scale ${plugin} ${size}: log around SIGTERM:\n  ${stopLog.join('\n  ')}`);
        const peaks = sampler.stop();
        // A restart over the kept state, the set still in the kernel.
        const again = startLogged(configPath);
        const againSampler = treeSampler(again.child.pid!);
        const startedAt = performance.now();
        const restoreMs = (await again.next(/^restored the last known good set/)).at - startedAt;
        const restartCycleMs = Number((await again.next(/^cycle done$/)).rec.ms);
        const againPeaks = againSampler.stop();
        const restartAgentPeakMB = (Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${again.child.pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024) / 1e6;
        again.child.kill('SIGTERM');
        await again.exited;
        const f: ScaleFigure = {
          size, plugin, firstCycleMs, changed: changed.length, changedCycleMs, quietCycleMs: quietMs, selfHealMs, reloadMs, reloadBusyMs, stopMs,
          treePeakMB: peaks.treeMB, agentPeakMB, childrenPeakMB: peaks.childrenMB, largestChild: peaks.largestChild,
          restoreMs, restartCycleMs, restartTreePeakMB: againPeaks.treeMB, restartAgentPeakMB, restartLargestChild: againPeaks.largestChild, load: `${load0} -> ${load()}`,
        };
        figures.push(f);
        log(`scale ${plugin} ${size}: ${JSON.stringify(f)}`);
        if (plugin === 'nftables') cost.push(...(await nftCost(ns, size)));
      } finally {
        await sim.close();
        rmSync(dir, { recursive: true, force: true });
        forget();
      }
    }
  }
  return { figures, cost };
}

