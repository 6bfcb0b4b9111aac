/**
 * End-to-end figures: `node dist/cli.js sync --once --json` (plugin ipset,
 * rules in the benchmark namespace via config `netns`) against the simulator
 * in its own process. A full sync from an empty state and an empty kernel,
 * then incremental cycles with 1% of the indicators changed between them.
 * Peak RSS of the agent process comes from GNU time (`%M`, VmHWM).
 *
 * The simulator refuses request bodies over 1 MiB, so at a million indicators
 * (~120,000 entries applied) it answers the state report with 413: the agent
 * still builds and sends the whole report (its cost is in the `report` phase)
 * and logs a warning; `reported` is then false.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import type { BenchNetns } from './netns.js';
import { onExit } from './netns.js';
import { startSimulatorProcess, type SimProcess } from './simulator.js';
import { log, median } from './stats.js';
import { warmIncrementalCycles } from './warm.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI = join(ROOT, 'dist/cli.js');
/** The build `sync --once` runs (`--entry`: another one, to compare two). */
let cli = CLI;
export function useSyncEntry(path: string): void {
  cli = path;
}

/**
 * The Node flags the agent runs with: those of its shebang (`#!/usr/bin/env -S node FLAGS`),
 * which the single binary embeds too. Spawning `node dist/cli.js` skips the shebang, so the
 * benchmark passes them itself and measures the agent as it is shipped.
 */
export function agentNodeFlags(entry: string = CLI): string[] {
  const m = /^#!\/usr\/bin\/env -S node(?: (.*))?$/.exec(readFileSync(entry, 'utf8').split('\n')[0]!);
  return m?.[1] ? m[1].split(' ') : [];
}
const TIME = '/usr/bin/time';
/** The agent's local default; set on the simulator's stored configuration so the run does not depend on the simulator's own default. */
export const SCORE_THRESHOLD = 3;

export interface SyncRun {
  /** Process start to exit, as an operator sees it (includes Node start-up and printing the JSON). */
  wallMs: number;
  /** The cycle itself (`duration_ms`): what a daemon cycle costs. */
  cycleMs: number;
  /** Peak resident set of the agent process (GNU time %M = VmHWM), MB (10^6 bytes). */
  peakRssMB: number;
  applied: number;
  fullPull: boolean;
  reported: boolean;
  changes: { added: number; removed: number; updated: number; mode: string } | null;
  timings: Record<string, number>;
}

export interface SyncFigure {
  size: number;
  /** `daemon`: incremental cycles in one long-lived process, as `wcf-agent run` does them (no RSS: it is the benchmark's own process). */
  kind: 'full' | 'incremental' | 'daemon';
  /** Indicators changed before each incremental run. */
  changed?: number;
  runs: SyncRun[];
  median: { wallMs: number; cycleMs: number; peakRssMB: number; applied: number; timings: Record<string, number> };
  /**
   * Full sync only: one more run without `--json`, which prints a one-line summary instead of
   * the whole plan (the daemon prints neither), to show what the JSON output costs.
   */
  withoutJson?: { wallMs: number; peakRssMB: number };
}

function summarize(size: number, kind: SyncFigure['kind'], runs: SyncRun[], changed?: number): SyncFigure {
  const phases = new Set(runs.flatMap((r) => Object.keys(r.timings)));
  const timings: Record<string, number> = {};
  for (const p of phases) timings[p] = median(runs.map((r) => r.timings[p] ?? 0));
  return {
    size,
    kind,
    ...(changed === undefined ? {} : { changed }),
    runs,
    median: {
      wallMs: median(runs.map((r) => r.wallMs)),
      cycleMs: median(runs.map((r) => r.cycleMs)),
      peakRssMB: median(runs.map((r) => r.peakRssMB)),
      applied: median(runs.map((r) => r.applied)),
      timings,
    },
  };
}

/** The top-level fields of `sync --once --json` (the plan, last and large, is skipped). */
function parseSyncOutput(out: string): Record<string, unknown> {
  const cut = out.indexOf('\n  "plan": ');
  return JSON.parse(cut === -1 ? out : `${out.slice(0, cut).replace(/,$/, '')}\n}`) as Record<string, unknown>;
}

/** `sync --once` under GNU time: wall time, exit code, outputs, peak RSS. */
async function timeCli(configPath: string, json: boolean, extraNodeArgs: readonly string[]) {
  const rssFile = join(tmpdir(), `wcf-bench-rss-${process.pid}`);
  const args = ['-f', '%M', '-o', rssFile, process.execPath, ...agentNodeFlags(cli), ...extraNodeArgs, cli, 'sync', '--once', ...(json ? ['--json'] : []), '--config', configPath];
  const t0 = performance.now();
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    // Own process group, so stopping the benchmark kills GNU time, the agent and its commands together.
    const child = spawn(TIME, args, { env: { ...process.env, WCF_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const forget = onExit(() => process.kill(-child.pid!, 'SIGKILL'));
    child.once('close', forget);
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
    child.once('error', reject);
    child.once('close', (c) => resolve({ code: c, stdout: Buffer.concat(out).toString('utf8'), stderr: err }));
  });
  const wallMs = performance.now() - t0;
  if (code !== 0) throw new Error(`sync --once exited ${code}: ${stderr}`);
  const kb = Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop());
  rmSync(rssFile, { force: true });
  return { wallMs, stdout, peakRssMB: (kb * 1024) / 1e6 };
}

async function runCli(configPath: string, extraNodeArgs: readonly string[] = []): Promise<SyncRun> {
  const { wallMs, stdout, peakRssMB } = await timeCli(configPath, true, extraNodeArgs);
  const j = parseSyncOutput(stdout);
  if (j.ok !== true) throw new Error(`sync --once not ok: ${String(j.message)}`);
  return {
    wallMs,
    cycleMs: Number(j.duration_ms),
    peakRssMB,
    applied: Number(j.applied),
    fullPull: j.full_pull === true,
    reported: j.reported === true,
    changes: (j.changes as SyncRun['changes']) ?? null,
    timings: (j.timings_ms as Record<string, number>) ?? {},
  };
}

/** Every indicator address in the feed, by the contract's ts-cursor walk (not timed). */
async function feedAddresses(sim: SimProcess): Promise<string[]> {
  const seen = new Set<string>();
  let ts = 0;
  for (;;) {
    const r = await request(`${sim.url}/ips?limit=1000&filter=0&ts=${ts}&full=no`, { headers: { authorization: `Bearer ${sim.token}` } });
    const page = (await r.body.json()) as { body: { ip: string; ts: number }[] };
    let maxTs = ts;
    for (const it of page.body) {
      seen.add(it.ip);
      if (it.ts > maxTs) maxTs = it.ts;
    }
    if (page.body.length < 1000) break;
    ts = maxTs > ts ? maxTs : ts + 1;
  }
  return [...seen];
}

/**
 * The changed records' `ts`: at most 500 per second, each round after the previous one. The API
 * pages by `ts` with no offset, so a real feed's burst of more than a page (1,000) at one second
 * cannot be paged through (the agent logs it and skips the rest); the simulator would stamp a whole
 * round with the one or two seconds it takes, so the benchmark spreads them as a feed would.
 */
let lastChangeTs = 0;

/** `count` distinct addresses picked reproducibly; half raised to 9.5, half lowered to 1.5 (below the threshold). */
function pickChanges(ips: readonly string[], count: number, seed: number): { ip: string; score: number; ts: number }[] {
  // splitmix32: neighbouring seeds (one per run) give unrelated picks.
  let s = seed >>> 0;
  const rand = () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
  const picked = new Set<number>();
  while (picked.size < Math.min(count, ips.length)) picked.add(Math.floor(rand() * ips.length));
  const base = Math.max(Math.floor(Date.now() / 1000), lastChangeTs + 1);
  const out = [...picked].map((i, k) => ({ ip: ips[i]!, score: k % 2 === 0 ? 9.5 : 1.5, ts: base + Math.floor(k / 500) }));
  lastChangeTs = out.at(-1)?.ts ?? lastChangeTs;
  return out;
}

export interface SyncBenchOptions {
  ns: BenchNetns;
  sizes: readonly number[];
  /** Sizes for which incremental cycles are measured after the full syncs. */
  incrementalSizes: readonly number[];
  runs: number;
  /** Extra node flags for the agent (profiling: --cpu-prof ...). */
  nodeArgs?: readonly string[];
}

export async function benchSync(o: SyncBenchOptions): Promise<SyncFigure[]> {
  const figures: SyncFigure[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-'));
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  for (const n of o.sizes) {
    const sim = await startSimulatorProcess(n, 1);
    try {
      await sim.setAgentConfig({ maximum_rules: n, score_threshold: SCORE_THRESHOLD });
      const stateDir = join(dir, `state-${n}`);
      const configPath = join(dir, `config-${n}.json`);
      writeFileSync(
        configPath,
        JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'ipset', netns: o.ns.name, state_dir: stateDir, maximum_rules: n }),
      );

      const full: SyncRun[] = [];
      for (let i = 0; i < o.runs; i++) {
        rmSync(stateDir, { recursive: true, force: true });
        await o.ns.reset();
        const r = await runCli(configPath, o.nodeArgs);
        if (!r.fullPull) throw new Error('expected a full pull');
        await checkKernel(o.ns, stateDir, n, r.applied);
        full.push(r);
        log(`sync full ${n}: wall ${r.wallMs.toFixed(0)} ms, cycle ${r.cycleMs} ms, rss ${r.peakRssMB.toFixed(0)} MB, applied ${r.applied}, ${JSON.stringify(r.timings)}`);
      }
      rmSync(stateDir, { recursive: true, force: true });
      await o.ns.reset();
      const plain = await timeCli(configPath, false, o.nodeArgs ?? []);
      log(`sync full ${n} without --json: wall ${plain.wallMs.toFixed(0)} ms, rss ${plain.peakRssMB.toFixed(0)} MB`);
      figures.push({ ...summarize(n, 'full', full), withoutJson: { wallMs: plain.wallMs, peakRssMB: plain.peakRssMB } });

      if (o.incrementalSizes.includes(n)) {
        const ips = await feedAddresses(sim);
        const count = Math.round(ips.length / 100);
        const inc: SyncRun[] = [];
        for (let i = 0; i < o.runs; i++) {
          await sim.upsert(pickChanges(ips, count, n + i + 1));
          const r = await runCli(configPath, o.nodeArgs);
          if (r.fullPull) throw new Error('expected an incremental pull');
          inc.push(r);
          log(`sync incremental ${n} (${count} changed): wall ${r.wallMs.toFixed(0)} ms, cycle ${r.cycleMs} ms, rss ${r.peakRssMB.toFixed(0)} MB, ${JSON.stringify(r.changes)}, ${JSON.stringify(r.timings)}`);
        }
        figures.push(summarize(n, 'incremental', inc, count));

        const warm = await warmIncrementalCycles(configPath, o.runs, (i) => sim.upsert(pickChanges(ips, count, 7919 * n + i + 2)));
        figures.push(
          summarize(
            n,
            'daemon',
            warm.map((w) => ({ wallMs: w.cycleMs, cycleMs: w.cycleMs, peakRssMB: NaN, applied: 0, fullPull: false, reported: true, changes: w.changes, timings: w.timings })),
            count,
          ),
        );
      }
    } finally {
      await sim.close();
    }
  }
  return figures;
}

/**
 * The kernel holds what the agent reports applied, less the entries whose kernel timeout ran out
 * since (score entries leave by their timeout, the last ones within seconds of the apply).
 */
async function checkKernel(ns: BenchNetns, stateDir: string, n: number, applied: number): Promise<void> {
  // The header counts the set's ownership marker element too (see src/firewall/ownership.ts).
  const inKernel = (await kernelCount(ns)) - 1;
  const now = Date.now() / 1000;
  const saved = JSON.parse(readFileSync(join(stateDir, 'applied-ipset.json'), 'utf8')) as { entries: { expiresAt: number | null }[] };
  if (saved.entries.length !== applied) throw new Error(`sync ${n}: ${applied} reported applied, ${saved.entries.length} in applied-ipset.json`);
  const surely = saved.entries.filter((e) => e.expiresAt === null || e.expiresAt > now + 2).length;
  if (inKernel > applied || inKernel < surely) throw new Error(`sync ${n}: ${inKernel} entries in the kernel, ${applied} reported applied (${surely} not yet expired)`);
}

async function kernelCount(ns: BenchNetns): Promise<number> {
  const out = await ns.exec('ipset', ['list', '-t', 'wcf-blocklist']);
  const m = /Number of entries: (\d+)/.exec(out);
  return m ? Number(m[1]) : -1;
}
