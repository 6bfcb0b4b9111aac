/**
 * The daemon as production runs it: `wcf-agent run` (node dist/cli.js with the agent's Node
 * flags, or the single binary; with the systemd unit's environment) against the simulator in
 * its own process, rules in the benchmark namespace (config `netns`). Memory comes from the agent's own /proc/PID/status:
 *
 * - `firstCycleMs`: the first cycle's duration as the daemon logs it (a full pull and apply);
 * - `heldMB`: VmRSS half-way between cycles, after each of the first `cycles` cycles (what the
 *   host pays while the agent waits for the next sync);
 * - `peakMB`: VmHWM at the end (the high-water mark over every cycle).
 *
 * Cycles come `gapMs` apart: the stored sync_time is one minute and WCF_AGENT_MINUTE_MS
 * shortens the daemon's minute (the same knob the tests use).
 *
 * `all selected`: the simulator's clock is set a month ahead of the agent's, so every item is
 * stamped in the agent's future and keeps its undecayed score (1..10); with score_threshold 1
 * every indicator is selected, up to maximum_rules = N.
 *
 * `idleCpu` measures the CPU seconds (utime + stime from /proc/PID/stat) the daemon uses while
 * it waits between two cycles with the default minute.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { BenchNetns } from './netns.js';
import { onExit } from './netns.js';
import { startSimulatorProcess } from './simulator.js';
import { log, median } from './stats.js';
import { startTlsFront } from './tls-front.js';
import { agentNodeFlags, SCORE_THRESHOLD } from './sync.js';

const ROOT = join(import.meta.dirname, '../..');
export const BINARY = join(ROOT, 'dist/wcf-agent-linux-x64');

export type AgentForm = 'node' | 'binary';
export type DaemonPlugin = 'ipset' | 'nftables';

export interface DaemonRun {
  firstCycleMs: number;
  applied: number;
  /** VmRSS half-way to the next cycle, after cycle 1, 2, ... */
  heldMB: number[];
  peakMB: number;
}

export interface DaemonFigure {
  size: number;
  plugin: DaemonPlugin;
  allSelected: boolean;
  https: boolean;
  agent: AgentForm;
  cycles: number;
  runs: DaemonRun[];
  median: { firstCycleMs: number; applied: number; heldLastMB: number; heldMaxMB: number; peakMB: number };
}

/** Where `node` finds the agent's entry point (`--entry`: another build of it, to compare two; its shebang gives the Node flags). */
let distCli = join(ROOT, 'dist/cli.js');
export function useAgentEntry(path: string): void {
  distCli = path;
}

/** The command line of the agent in the given form. */
export function agentCommand(form: AgentForm, args: readonly string[]): [string, string[]] {
  if (form === 'binary') {
    if (!existsSync(BINARY)) throw new Error(`${BINARY} missing: npm run build:binary first`);
    return [BINARY, [...args]];
  }
  return [process.execPath, [...agentNodeFlags(distCli), distCli, ...args]];
}

/** Resident figures of a live process, MB (10^6 bytes). */
export function procMemory(pid: number): { rssMB: number; hwmMB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMB: (kb('VmRSS') * 1024) / 1e6, hwmMB: (kb('VmHWM') * 1024) / 1e6 };
}

/** utime + stime of a live process, seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // fields 14 and 15 of proc(5), in clock ticks (USER_HZ = 100)
}

export interface Daemon {
  child: ChildProcess;
  /** Resolves with the next `cycle done` log record (rejects if the daemon exits or a cycle fails). */
  nextCycle(): Promise<{ applied: number; ms: number }>;
  stop(): Promise<void>;
}

/** The environment the systemd unit gives the daemon (its `Environment=` lines), so the bench runs it as production does. */
export function unitEnvironment(unit = join(ROOT, 'systemd/wcf-agent.service')): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(unit, 'utf8').split('\n')) {
    if (!line.startsWith('Environment=')) continue;
    for (const pair of line.slice('Environment='.length).trim().split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

/**
 * WCF_BENCH_DAEMON_ENV="K=V K=V": variables set on top of the unit's, to measure another
 * allocator setting against the unit's (e.g. MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=4194304).
 */
function extraEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (process.env.WCF_BENCH_DAEMON_ENV ?? '').trim().split(/\s+/)) {
    const eq = pair.indexOf('=');
    if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

/**
 * Drop the page cache of the single binary before it runs, as after a reboot. Right after the
 * build has written it, its cached pages are a few large blocks (one large write), and the
 * kernel maps a whole block where the process touches one page of it: the same binary then
 * measured 87 MB held at 10k instead of 72, until those pages were evicted. A host runs the
 * binary read back from disk; `dd iflag=nocache` (coreutils) asks the kernel to forget the
 * file's cached pages (only those no running process maps).
 */
function dropBinaryPageCache(path: string): void {
  spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'ignore' });
}

export function startDaemon(form: AgentForm, configPath: string, minuteMs: number): Daemon {
  const [cmd, args] = agentCommand(form, ['run', '--config', configPath]);
  if (form === 'binary') dropBinaryPageCache(cmd);
  const env = { ...process.env, ...unitEnvironment(), ...extraEnvironment(), WCF_LOG_LEVEL: 'info', WCF_AGENT_MINUTE_MS: String(minuteMs) };
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const forget = onExit(() => child.kill('SIGKILL'));
  child.once('exit', forget);
  const waiting: Array<{ resolve: (v: { applied: number; ms: number }) => void; reject: (e: Error) => void }> = [];
  const done: Array<{ applied: number; ms: number }> = [];
  let tail = '';
  createInterface({ input: child.stderr! }).on('line', (line) => {
    tail = (tail + line + '\n').slice(-4000);
    let rec: { msg?: string; applied?: number; ms?: number; level?: number };
    try {
      rec = JSON.parse(line) as typeof rec;
    } catch {
      return;
    }
    if (rec.msg === 'cycle done') {
      const v = { applied: Number(rec.applied), ms: Number(rec.ms) };
      const w = waiting.shift();
      if (w) w.resolve(v);
      else done.push(v);
    } else if ((rec.level ?? 0) >= 50 || /^cycle skipped/.test(rec.msg ?? '')) {
      // a failed cycle is logged at error level; the benchmark wants successful ones only
      waiting.shift()?.reject(new Error(`daemon: ${rec.msg}`));
    }
  });
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`daemon exited ${code}: ${tail}`));
  });
  return {
    child,
    nextCycle: () => {
      const v = done.shift();
      return v ? Promise.resolve(v) : new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface DaemonBenchOptions {
  ns: BenchNetns;
  sizes: readonly number[];
  plugins: readonly DaemonPlugin[];
  /** Sizes measured with every indicator selected (the others use the simulator's own data and threshold 3). */
  allSelectedSizes: readonly number[];
  runs: number;
  cycles: number;
  gapMs: number;
  agent: AgentForm;
  /** The API behind TLS (the simulator behind a TLS front, its certificate in `ca_file`), as in production. */
  https: boolean;
}

/** A month: the simulator's clock is this far ahead of the agent's for `all selected`. */
const AHEAD_S = 30 * 86_400;

async function withSimulator<T>(o: { size: number; allSelected: boolean; ns: BenchNetns; plugin: DaemonPlugin; syncTime: number; https?: boolean }, fn: (configPath: string) => Promise<T>): Promise<T> {
  const now = o.allSelected ? Math.floor(Date.now() / 1000) + AHEAD_S : undefined;
  const sim = await startSimulatorProcess(o.size, 1, now);
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-daemon-'));
  const forget = onExit(() => rmSync(dir, { recursive: true, force: true }));
  const front = o.https ? await startTlsFront(sim.url, dir) : undefined;
  try {
    const threshold = o.allSelected ? 1 : SCORE_THRESHOLD;
    await sim.setAgentConfig({ maximum_rules: o.size, score_threshold: threshold, sync_time: o.syncTime });
    const configPath = join(dir, 'config.json');
    const api = front ? { base_url: front.url, ca_file: front.caFile } : { base_url: sim.url };
    const config = { agid: sim.agid, ...api, token: sim.token, plugin: o.plugin, netns: o.ns.name, state_dir: join(dir, 'state'), maximum_rules: o.size, score_threshold: threshold, jitter_seconds: 0 };
    writeFileSync(configPath, JSON.stringify(config));
    return await fn(configPath);
  } finally {
    await front?.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
    forget();
  }
}

export async function benchDaemon(o: DaemonBenchOptions): Promise<DaemonFigure[]> {
  const figures: DaemonFigure[] = [];
  for (const size of o.sizes) {
    for (const plugin of o.plugins) {
      const allSelected = o.allSelectedSizes.includes(size);
      const runs: DaemonRun[] = [];
      for (let i = 0; i < o.runs; i++) {
        await o.ns.reset();
        const run = await withSimulator({ size, allSelected, ns: o.ns, plugin, syncTime: 1, https: o.https }, async (configPath) => {
          const d = startDaemon(o.agent, configPath, o.gapMs);
          try {
            const heldMB: number[] = [];
            let first = { applied: 0, ms: 0 };
            for (let c = 0; c < o.cycles; c++) {
              const r = await d.nextCycle();
              if (c === 0) first = r;
              await wait(o.gapMs / 2); // half-way to the next cycle: what the agent holds while it waits
              heldMB.push(procMemory(d.child.pid!).rssMB);
            }
            return { firstCycleMs: first.ms, applied: first.applied, heldMB, peakMB: procMemory(d.child.pid!).hwmMB };
          } finally {
            await d.stop();
          }
        });
        runs.push(run);
        log(`daemon ${o.agent} ${plugin} ${size}${allSelected ? ' all selected' : ''}${o.https ? ' https' : ''}: first cycle ${run.firstCycleMs} ms, ${run.applied} applied, held ${run.heldMB.map((m) => m.toFixed(0)).join('/')} MB, peak ${run.peakMB.toFixed(0)} MB`);
      }
      figures.push({
        size,
        plugin,
        allSelected,
        https: o.https,
        agent: o.agent,
        cycles: o.cycles,
        runs,
        median: {
          firstCycleMs: median(runs.map((r) => r.firstCycleMs)),
          applied: median(runs.map((r) => r.applied)),
          heldLastMB: median(runs.map((r) => r.heldMB.at(-1)!)),
          heldMaxMB: median(runs.map((r) => Math.max(...r.heldMB))),
          peakMB: median(runs.map((r) => r.peakMB)),
        },
      });
    }
  }
  return figures;
}

export interface IdleFigure {
  size: number;
  agent: AgentForm;
  minutes: number;
  cpuSeconds: number;
  rssMB: number;
}

/** CPU seconds the daemon spends between two cycles (default minute, stored sync_time above the window). */
export async function idleCpu(ns: BenchNetns, size: number, minutes: number, agent: AgentForm): Promise<IdleFigure> {
  await ns.reset();
  return withSimulator({ size, allSelected: false, ns, plugin: 'ipset', syncTime: minutes + 5 }, async (configPath) => {
    const d = startDaemon(agent, configPath, 60_000);
    try {
      await d.nextCycle();
      const pid = d.child.pid!;
      const before = cpuSeconds(pid);
      await wait(minutes * 60_000);
      const cpu = cpuSeconds(pid) - before;
      const { rssMB } = procMemory(pid);
      log(`daemon idle ${agent} ${size}: ${cpu.toFixed(2)} CPU s over ${minutes} min, RSS ${rssMB.toFixed(0)} MB`);
      return { size, agent, minutes, cpuSeconds: cpu, rssMB };
    } finally {
      await d.stop();
    }
  });
}
