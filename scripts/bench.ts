/**
 * The agent's benchmark (issue #7). Not a test: figures depend on the machine.
 *
 *   npm run bench [-- --sizes 10000,100000,1000000] [--runs 3] [--quick]
 *                 [--only sync,incremental,apply,naive,daemon,idle,peers] [--naive-sizes 1000,10000]
 *                 [--out results] [--cpu-prof]
 *   npm run bench -- --from results/bench.json     (tables and charts again, nothing measured)
 *
 * Everything runs on this machine in one process tree, as root, inside a
 * network namespace the benchmark creates and always removes (also on error
 * and Ctrl-C). Figures, each the median of `--runs` runs:
 *
 * - full sync end to end: `node dist/cli.js sync --once --json` (plugin ipset,
 *   config `netns`) against the simulator in its own process, from an empty
 *   state and an empty kernel; maximum_rules = N, score_threshold 3;
 * - incremental cycle after changing 1% of the indicators (half raised above
 *   the threshold, half lowered below it) through the simulator's control route;
 * - apply only: ipset and nftables plugins vs bare `ipset restore` / `nft -f`
 *   of the same entries;
 * - the naive way: one `iptables -A` process per address (larger sizes
 *   extrapolated linearly, marked);
 * - peak RSS of the agent process (GNU time %M = VmHWM) for each sync;
 * - the daemon (`wcf-agent run`): peak and held RSS over a few cycles (bench/daemon.ts);
 *   opt-in: its idle CPU over 10 minutes, and CrowdSec's bouncer side by side (bench/peers.ts).
 *
 * Prints a table on stdout and writes results/bench.json, results/bench-time.svg
 * and results/bench-rss.svg. `--cpu-prof` runs the agent under
 * `node --cpu-prof` (profiles in results/prof; times are then inflated).
 *
 * Each group of figures (sync, apply, naive) runs in a fresh worker process
 * (this script with `--worker`), so one group's garbage (a million entries
 * built for the apply figure) does not slow the next: a large parent makes
 * every process spawn slower, and the plugins spawn more than the bare tools.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchApply, type ApplyResult } from './bench/apply.js';
import { barChart, formatMs, formatTickMs } from './bench/chart.js';
import { benchNaive, type NaiveFigure } from './bench/naive.js';
import { cleanupNow, createBenchNetns, onExit, useBenchNetns } from './bench/netns.js';
import { log, sizeLabel } from './bench/stats.js';
import { benchSync, SCORE_THRESHOLD, useSyncEntry, type SyncFigure } from './bench/sync.js';
import { benchScale, type NftCostFigure, type ScaleFigure } from './bench/scale.js';
import { benchDaemon, idleCpu, useAgentEntry, type AgentForm, type DaemonFigure, type IdleFigure } from './bench/daemon.js';
import { benchPeers, type PeerFigure } from './bench/peers.js';
import { daemonChart, memoryRows, memoryTargets, peerCharts } from './bench/memory-report.js';
import { benchFleet, type FleetResult } from './bench/fleet.js';
import { fleetRows, fleetTargets } from './bench/fleet-report.js';

const FIGURES = ['sync', 'incremental', 'apply', 'naive', 'daemon', 'idle', 'peers', 'fleet'] as const;
type FigureName = (typeof FIGURES)[number];
/** Figures left out unless `--only` names them: the idle figure takes 10 minutes, the peer needs CrowdSec's packages, the fleet half an hour. */
const OPT_IN: readonly FigureName[] = ['idle', 'peers', 'fleet'];
/** Worker groups, in the order they run. */
const GROUPS = ['sync', 'apply', 'naive', 'daemon', 'idle', 'peers', 'fleet'] as const;
type Group = (typeof GROUPS)[number];
type Options = ReturnType<typeof parseOptions>;

interface GroupResult {
  sync: SyncFigure[];
  apply: ApplyResult[];
  naive: NaiveFigure[];
  daemon: DaemonFigure[];
  idle: IdleFigure[];
  peers: PeerFigure[];
  fleet: FleetResult[];
  /** The daemon at scale, nftables and ipset side by side (bench/scale.ts), and what the nft set costs other nft commands. */
  scale?: { figures: ScaleFigure[]; cost: NftCostFigure[] };
}

const emptyResult = (): GroupResult => ({ sync: [], apply: [], naive: [], daemon: [], idle: [], peers: [], fleet: [] });

function parseOptions() {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string' },
      runs: { type: 'string' },
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      'naive-sizes': { type: 'string' },
      'incremental-sizes': { type: 'string' },
      out: { type: 'string', default: join(import.meta.dirname, '../results') },
      'cpu-prof': { type: 'boolean', default: false },
      'daemon-sizes': { type: 'string' },
      'daemon-plugins': { type: 'string' },
      'scale-sizes': { type: 'string' },
      https: { type: 'boolean', default: false },
      'all-selected-sizes': { type: 'string' },
      cycles: { type: 'string' },
      'gap-ms': { type: 'string' },
      agent: { type: 'string' },
      entry: { type: 'string' },
      'idle-minutes': { type: 'string' },
      'peer-sizes': { type: 'string' },
      'fleet-hosts': { type: 'string' },
      'fleet-sizes': { type: 'string' },
      from: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
      // Internal: run one group of figures in the given namespace, print its results as JSON.
      worker: { type: 'string' },
      netns: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      'usage: npm run bench -- [--sizes 10000,100000,1000000] [--runs 3] [--quick] [--only sync,incremental,apply,naive,daemon,idle,peers]\n' +
        '                        [--naive-sizes 1000,10000] [--incremental-sizes 100000,1000000] [--out DIR] [--cpu-prof]\n' +
        '       (idle and peers run only when --only names them)\n' +
        '       npm run bench -- --from results/bench.json [--out DIR]   tables and charts again from saved results\n' +
        '       daemon: [--daemon-sizes 10000,100000,1000000] [--daemon-plugins nftables,ipset] [--all-selected-sizes 1000000] [--https] [--scale-sizes 100000,1000000|0]\n' +
        '               [--cycles 3] [--gap-ms 4000] [--agent node|binary] [--entry dist/cli.js (another build, to compare; sync too)]\n' +
        '               environment: the systemd unit\'s Environment= lines, plus WCF_BENCH_DAEMON_ENV="K=V K=V" if set\n' +
        '       idle (opt-in): [--idle-minutes 10]; peers (opt-in, CrowdSec): [--peer-sizes 10000,100000]\n' +
        '       fleet (opt-in, virtual time): [--fleet-hosts 200] [--fleet-sizes 10000,1000000|0]\n' +
        '--quick = --sizes 10000,100000 --runs 1 --naive-sizes 1000 (flags given explicitly still win)\n',
    );
    process.exit(0);
  }
  const list = (v: string | undefined, fallback: string): number[] =>
    (v ?? fallback).split(',').map((s) => {
      const n = Number(s.trim().replace(/k$/i, '000').replace(/M$/, '000000'));
      if (!Number.isInteger(n) || n <= 0) throw new Error(`not a size: ${s}`);
      return n;
    });
  const q = values.quick;
  const only = (values.only ?? FIGURES.filter((f) => !OPT_IN.includes(f)).join(',')).split(',').map((s) => s.trim()) as FigureName[];
  for (const f of only) if (!FIGURES.includes(f)) throw new Error(`--only: unknown figure ${f} (${FIGURES.join(', ')})`);
  const sizes = list(values.sizes, q ? '10000,100000' : '10000,100000,1000000');
  const runs = Number(values.runs ?? (q ? '1' : '3'));
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs: a positive integer');
  return {
    sizes,
    runs,
    only,
    naiveSizes: list(values['naive-sizes'], q ? '1000' : '1000,10000'),
    incrementalSizes: list(values['incremental-sizes'], '100000,1000000').filter((n) => sizes.includes(n)),
    out: values.out,
    cpuProf: values['cpu-prof'],
    daemonSizes: list(values['daemon-sizes'], q ? '10000,100000' : '10000,100000,1000000'),
    daemonPlugins: (values['daemon-plugins'] ?? 'nftables,ipset').split(',').map((p) => {
      if (p !== 'nftables' && p !== 'ipset') throw new Error(`--daemon-plugins: nftables or ipset, not ${p}`);
      return p;
    }),
    allSelectedSizes: list(values['all-selected-sizes'], '1000000'),
    // The daemon at scale (2+ cycles, 1% changed, SIGHUP, SIGTERM in flight, the process tree's memory); `0`: none.
    scaleSizes: values['scale-sizes'] === '0' ? [] : list(values['scale-sizes'], q ? '100000' : '100000,1000000'),
    https: values.https,
    cycles: positive('--cycles', values.cycles ?? '3'),
    gapMs: positive('--gap-ms', values['gap-ms'] ?? '4000'),
    agent: agentForm(values.agent ?? 'node'),
    entry: values.entry,
    idleMinutes: positive('--idle-minutes', values['idle-minutes'] ?? '10'),
    peerSizes: list(values['peer-sizes'], '10000'),
    fleetHosts: positive('--fleet-hosts', values['fleet-hosts'] ?? '200'),
    // `0`: no host days, only the fleet's steady state and restart.
    fleetSizes: values['fleet-sizes'] === '0' ? [] : list(values['fleet-sizes'], '10000,1000000'),
    from: values.from,
    worker: values.worker as Group | undefined,
    netns: values.netns,
  };
}

function positive(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: a positive integer, not ${v}`);
  return n;
}

function agentForm(v: string): AgentForm {
  if (v !== 'node' && v !== 'binary') throw new Error(`--agent: node or binary, not ${v}`);
  return v;
}

/** One group of figures, in this process (a worker). */
async function runGroup(o: Options, group: Group, nsName: string): Promise<GroupResult> {
  const ns = useBenchNetns(nsName);
  const want = (f: FigureName) => o.only.includes(f);
  const r = emptyResult();
  if (o.entry) {
    useAgentEntry(o.entry);
    useSyncEntry(o.entry);
  }
  if (group === 'sync') {
    const nodeArgs = o.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(o.out, 'prof')}`] : [];
    r.sync = await benchSync({ ns, sizes: o.sizes, incrementalSizes: want('incremental') ? o.incrementalSizes : [], runs: o.runs, nodeArgs });
    if (!want('sync')) r.sync = r.sync.filter((f) => f.kind !== 'full');
  } else if (group === 'apply') {
    r.apply = await benchApply({ runner: ns.runner, sizes: o.sizes, runs: o.runs, backends: ['ipset', 'nftables'] });
  } else if (group === 'naive') {
    r.naive = await benchNaive(ns, o.naiveSizes, o.sizes, o.runs);
  } else if (group === 'daemon') {
    r.daemon = await benchDaemon({ ns, sizes: o.daemonSizes, plugins: o.daemonPlugins, allSelectedSizes: o.allSelectedSizes, runs: o.runs, cycles: o.cycles, gapMs: o.gapMs, agent: o.agent, https: o.https });
    if (o.scaleSizes.length > 0) r.scale = await benchScale(ns, o.scaleSizes, o.daemonPlugins);
  } else if (group === 'idle') {
    r.idle = [await idleCpu(ns, 10_000, o.idleMinutes, o.agent)];
  } else if (group === 'fleet') {
    r.fleet = [await benchFleet({ hosts: o.fleetHosts, sizes: o.fleetSizes })];
  } else {
    r.peers = await benchPeers({ sizes: o.peerSizes, runs: o.runs, agent: o.agent });
  }
  return r;
}

/** Run a group in a fresh worker process; its log goes to our stderr, its results come back on its stdout. */
async function runWorker(group: Group, nsName: string): Promise<GroupResult> {
  const args = ['--import', 'tsx', import.meta.filename, ...process.argv.slice(2), '--worker', group, '--netns', nsName];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const forget = onExit(() => child.kill('SIGTERM')); // the worker then stops its simulator and removes its files
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  forget();
  if (code !== 0) throw new Error(`bench worker ${group} exited ${code}`);
  return JSON.parse(out) as GroupResult;
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).trim().split('\n')[0]!;
  } catch {
    return 'absent';
  }
}

interface Target {
  what: string;
  limit: string;
  measured: string;
  met: boolean;
}

function targets(sync: SyncFigure[], apply: ApplyResult[]): Target[] {
  const out: Target[] = [];
  for (const a of apply) {
    out.push({ what: `apply ${a.backend} ${sizeLabel(a.size)}: plugin / bare`, limit: '<= 1.3x', measured: `${a.ratio.toFixed(2)}x`, met: a.ratio <= 1.3 });
  }
  const full = (n: number) => sync.find((f) => f.kind === 'full' && f.size === n);
  const inc = (n: number) => sync.find((f) => f.kind === 'incremental' && f.size === n);
  for (const [n, limitMs] of [[100_000, 3000], [1_000_000, 30_000]] as const) {
    const f = full(n);
    if (f) out.push({ what: `full sync ${sizeLabel(n)} (process wall time)`, limit: `< ${formatMs(limitMs)}`, measured: formatMs(f.median.wallMs), met: f.median.wallMs < limitMs });
  }
  const d = sync.find((f) => f.kind === 'daemon' && f.size === 100_000);
  if (d) out.push({ what: 'incremental 1% at 100k (daemon cycle)', limit: '< 200 ms', measured: formatMs(d.median.cycleMs), met: d.median.cycleMs < 200 });
  const i = inc(100_000);
  if (i) {
    out.push({ what: 'incremental 1% at 100k (cycle, duration_ms)', limit: '< 200 ms', measured: formatMs(i.median.cycleMs), met: i.median.cycleMs < 200 });
    out.push({ what: 'incremental 1% at 100k (process wall time)', limit: '< 200 ms', measured: formatMs(i.median.wallMs), met: i.median.wallMs < 200 });
  }
  const rss = sync.filter((f) => f.size === 1_000_000 && f.kind !== 'daemon');
  if (rss.length) {
    const peak = Math.max(...rss.map((f) => f.median.peakRssMB));
    out.push({ what: 'peak RSS at 1M (worst of full and incremental)', limit: '< 400 MB', measured: `${peak.toFixed(0)} MB`, met: peak < 400 });
  }
  return out;
}

/** Aligned text table; `right` lists the columns aligned right (numbers). */
function printTable(rows: string[][], right: readonly number[]): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (right.includes(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  console.log(line(rows[0]!));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows.slice(1)) console.log(line(r));
}

function charts(sync: SyncFigure[], apply: ApplyResult[], naive: NaiveFigure[], runs: number): { time: string; rss: string } {
  const sizes = [...new Set([...sync.map((f) => f.size), ...apply.map((a) => a.size), ...naive.map((n) => n.size)])].sort((a, b) => a - b);
  const groups = sizes.map(sizeLabel);
  const pick = <T,>(list: T[], size: (t: T) => number, value: (t: T) => number) => sizes.map((n) => {
    const t = list.find((x) => size(x) === n);
    return t === undefined ? undefined : value(t);
  });
  const full = sync.filter((f) => f.kind === 'full');
  const inc = sync.filter((f) => f.kind === 'incremental');
  const warm = sync.filter((f) => f.kind === 'daemon');
  const ap = (b: string) => apply.filter((a) => a.backend === b);
  const time = barChart({
    title: 'wcf-agent: time per operation (median)',
    subtitle: `${runs} run(s) each; sync = node dist/cli.js sync --once --json, plugin ipset, in a netns; apply = entries into an empty set`,
    xLabel: 'indicators in the feed (sync) / entries applied (apply, naive)',
    yLabel: 'time',
    groups,
    log: true,
    format: formatMs,
    tick: formatTickMs,
    series: [
      { name: 'full sync, end to end', color: '#1f77b4', values: pick(full, (f) => f.size, (f) => f.median.wallMs) },
      { name: 'incremental sync, 1% changed', color: '#aec7e8', values: pick(inc, (f) => f.size, (f) => f.median.wallMs) },
      { name: 'incremental daemon cycle, 1% changed', color: '#ff7f0e', values: pick(warm, (f) => f.size, (f) => f.median.cycleMs) },
      { name: 'apply: ipset plugin', color: '#2ca02c', values: pick(ap('ipset'), (a) => a.size, (a) => a.pluginMedianMs) },
      { name: 'apply: bare ipset restore', color: '#98df8a', values: pick(ap('ipset'), (a) => a.size, (a) => a.bareMedianMs) },
      { name: 'apply: nftables plugin', color: '#9467bd', values: pick(ap('nftables'), (a) => a.size, (a) => a.pluginMedianMs) },
      { name: 'apply: bare nft -f', color: '#c5b0d5', values: pick(ap('nftables'), (a) => a.size, (a) => a.bareMedianMs) },
      {
        name: 'naive: iptables -A per address',
        color: '#d62728',
        values: pick(naive, (f) => f.size, (f) => f.medianMs),
        estimated: sizes.map((n) => naive.find((f) => f.size === n)?.extrapolated ?? false),
      },
    ],
  });
  const rss = barChart({
    title: 'wcf-agent: peak RSS of the agent process (median)',
    subtitle: 'GNU time %M (VmHWM) of node dist/cli.js sync --once --json (and once without --json: no plan printed)',
    xLabel: 'indicators in the feed',
    yLabel: 'peak RSS, MB',
    groups: full.map((f) => sizeLabel(f.size)),
    log: false,
    format: (v) => `${v.toFixed(0)} MB`,
    line: { value: 400, label: 'target at 1M: 400 MB' },
    series: [
      { name: 'full sync', color: '#1f77b4', values: full.map((f) => f.median.peakRssMB) },
      { name: 'full sync without --json', color: '#17becf', values: full.map((f) => f.withoutJson?.peakRssMB) },
      { name: 'incremental sync, 1% changed', color: '#aec7e8', values: full.map((f) => inc.find((i) => i.size === f.size)?.median.peakRssMB) },
    ],
  });
  return { time, rss };
}

/** The results table and the targets table, on stdout; answers the targets. */
function printResults({ sync, apply, naive, daemon = [], idle = [], peers = [], fleet = [] }: GroupResult): Target[] {
  const rows: string[][] = [['figure', 'size', 'median', 'peak RSS', 'details']];
  for (const f of sync) {
    const t = f.median.timings;
    const phases = ['config', 'pull', 'select', 'cache', 'apply', 'save', 'report'].filter((p) => p in t).map((p) => `${p} ${Math.round(t[p]!)}`).join(', ');
    const plain = f.withoutJson ? `; without --json: ${formatMs(f.withoutJson.wallMs)}, ${f.withoutJson.peakRssMB.toFixed(0)} MB` : '';
    if (f.kind === 'daemon') {
      rows.push([`incremental (${f.changed} changed), daemon cycle`, sizeLabel(f.size), formatMs(f.median.cycleMs), '', `runCycle in a long-lived process; phases ms: ${phases}`]);
      continue;
    }
    rows.push([
      f.kind === 'full' ? 'full sync, process wall time' : `incremental sync (${f.changed} changed), wall`,
      sizeLabel(f.size),
      formatMs(f.median.wallMs),
      `${f.median.peakRssMB.toFixed(0)} MB`,
      `cycle ${formatMs(f.median.cycleMs)}, ${f.median.applied} applied; phases ms: ${phases}${plain}`,
    ]);
  }
  for (const a of apply) {
    rows.push([`apply ${a.backend}: plugin`, sizeLabel(a.size), formatMs(a.pluginMedianMs), '', `bare ${a.backend === 'ipset' ? 'ipset restore' : 'nft -f'} ${formatMs(a.bareMedianMs)}, ratio ${a.ratio.toFixed(2)}x`]);
  }
  for (const n of naive) {
    rows.push([
      `naive: iptables -A per address${n.extrapolated ? ' (extrapolated)' : ''}`,
      sizeLabel(n.size),
      formatMs(n.medianMs),
      '',
      `${n.perAddressMs.toFixed(2)} ms per address${n.extrapolated ? ', linear from the largest measured (a lower bound)' : ''}`,
    ]);
  }
  rows.push(...memoryRows(daemon, idle, peers), ...fleetRows(fleet));
  console.log();
  printTable(rows, [2, 3]);
  const tgt = [...targets(sync, apply), ...memoryTargets(daemon), ...fleetTargets(fleet)];
  if (tgt.length) {
    console.log();
    printTable([['target', 'limit', 'measured', 'met'], ...tgt.map((t) => [t.what, t.limit, t.measured, t.met ? 'yes' : 'NO'])], [2]);
  }
  return tgt;

}

/** The daemon at scale (bench/scale.ts): one line per backend and size, then the nft costs. */
function printScale(scale: NonNullable<GroupResult['scale']>): void {
  const s = (ms: number | null) => (ms === null ? 'n/a' : `${(ms / 1000).toFixed(2)} s`);
  for (const f of scale.figures) {
    process.stdout.write(
      `${f.plugin} ${f.size}: first cycle ${s(f.firstCycleMs)}, 1% changed (${f.changed}) ${s(f.changedCycleMs)}, nothing changed ${s(f.quietCycleMs)}, ` +
        `self-heal ${s(f.selfHealMs)}, SIGHUP->reloaded ${s(f.reloadMs)} (cycle in flight ${s(f.reloadBusyMs)}), SIGTERM->exit ${s(f.stopMs)}, ` +
        `peak agent+children ${f.treePeakMB.toFixed(0)} MB (children ${f.childrenPeakMB.toFixed(0)}, the largest then ${f.largestChild}; agent VmHWM ${f.agentPeakMB.toFixed(0)}); ` +
        `restarted: restore ${s(f.restoreMs)}, first cycle ${s(f.restartCycleMs)}, peak agent+children ${f.restartTreePeakMB.toFixed(0)} MB (agent VmHWM ${f.restartAgentPeakMB.toFixed(0)}, the largest child ${f.restartLargestChild}), load ${f.load}\n`,
    );
  }
  for (const c of scale.cost) process.stdout.write(`nft cost at ${c.size}: ${c.command}: ${c.seconds.toFixed(2)} s, ${c.maxRssMB.toFixed(0)} MB\n`);
}

async function main(): Promise<void> {
  const o = parseOptions();
  if (o.worker) {
    if (!GROUPS.includes(o.worker) || !o.netns) throw new Error(`--worker needs a group (${GROUPS.join(', ')}) and --netns`);
    process.stdout.write(JSON.stringify(await runGroup(o, o.worker, o.netns)));
    return;
  }
  if (o.from) {
    // Tables and charts again from a saved bench.json, without measuring anything.
    const saved = JSON.parse(readFileSync(o.from, 'utf8')) as GroupResult & { options: { runs: number } };
    printResults(saved);
    mkdirSync(o.out, { recursive: true });
    writeCharts(o.out, saved, saved.options.runs);
    return;
  }
  const want = (f: FigureName) => o.only.includes(f);
  mkdirSync(o.out, { recursive: true });
  const ns = await createBenchNetns();
  log(`bench: namespace ${ns.name}; sizes ${o.sizes.join(',')}; runs ${o.runs}; figures ${o.only.join(',')}`);
  const started = new Date();

  const wanted: Record<Group, boolean> = { sync: want('sync') || want('incremental'), apply: want('apply'), naive: want('naive'), daemon: want('daemon'), idle: want('idle'), peers: want('peers'), fleet: want('fleet') };
  const results = emptyResult();
  for (const g of GROUPS) {
    if (!wanted[g]) continue;
    const r = await runWorker(g, ns.name);
    for (const k of GROUPS) (results[k] as unknown[]).push(...r[k]);
    if (r.scale) results.scale = r.scale;
  }
  const tgt = printResults(results);
  if (results.scale) printScale(results.scale);

  const result = {
    generatedAt: started.toISOString(),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGB: Math.round(totalmem() / 1e9),
      kernel: release(),
      node: process.version,
      ipset: version('ipset', ['-v']),
      nft: version('nft', ['-v']),
      iptables: version('iptables', ['-V']),
    },
    options: { sizes: o.sizes, runs: o.runs, only: o.only, naiveSizes: o.naiveSizes, incrementalSizes: o.incrementalSizes, cpuProf: o.cpuProf, scoreThreshold: SCORE_THRESHOLD, daemonSizes: o.daemonSizes, daemonPlugins: o.daemonPlugins, allSelectedSizes: o.allSelectedSizes, https: o.https, cycles: o.cycles, gapMs: o.gapMs, agent: o.agent, idleMinutes: o.idleMinutes, peerSizes: o.peerSizes, fleetHosts: o.fleetHosts, fleetSizes: o.fleetSizes },
    ...results,
    targets: tgt,
  };
  writeFileSync(join(o.out, 'bench.json'), `${JSON.stringify(result, null, 2)}\n`);
  writeCharts(o.out, results, o.runs);
  log(`bench: wrote ${join(o.out, 'bench.json')}, bench-time.svg, bench-rss.svg`);
}

function writeCharts(dir: string, { sync, apply, naive, daemon = [], peers = [] }: GroupResult, runs: number): void {
  const svg = charts(sync, apply, naive, runs);
  if (sync.length || apply.length || naive.length) writeFileSync(join(dir, 'bench-time.svg'), svg.time);
  if (sync.some((f) => f.kind === 'full')) writeFileSync(join(dir, 'bench-rss.svg'), svg.rss);
  const d = daemonChart(daemon, runs);
  if (d) writeFileSync(join(dir, 'bench-daemon-rss.svg'), d);
  const p = peerCharts(peers, runs);
  if (p) {
    writeFileSync(join(dir, 'bench-peers-rss.svg'), p.rss);
    writeFileSync(join(dir, 'bench-peers-time.svg'), p.time);
  }
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanupNow);
