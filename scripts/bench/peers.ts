/**
 * Side by side with a peer: CrowdSec's firewall bouncer (Debian 12's packages, see crowdsec.ts)
 * and `wcf-agent run`, nftables on both sides, each enforcer in a network namespace of its own,
 * the same N entries. Traffic stays on loopback and inside the namespaces: the simulator and
 * the agent on this host's loopback (the agent writes its rules into its namespace through
 * config `netns`), CrowdSec's LAPI and bouncer on their namespace's loopback.
 *
 * For each run and side: time from the enforcer's process start until all N are in its kernel
 * sets (listed every `pollMs`; the agent keeps addresses and networks in two sets, CrowdSec in
 * one), and its peak RSS (VmHWM from /proc) at that moment. A side that has not got there by
 * its deadline (peerDeadlineMs), whose enforcer exits, or whose first cycle fails, fails the
 * run with what its sets hold; a slow side says where it stands every 30 s.
 *
 * The N entries: the simulator's data with its clock a month ahead and score_threshold 1, so
 * the agent selects every indicator (see daemon.ts); what it applied (applied-nftables.json) is
 * what CrowdSec gets, as `ip` and `range` decisions, imported through its LAPI before the
 * bouncer starts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crowdsecPackages, startCrowdsec } from './crowdsec.js';
import { procMemory, startDaemon, type AgentForm } from './daemon.js';
import { onExit } from './netns.js';
import { startSimulatorProcess } from './simulator.js';
import { log, median } from './stats.js';

export interface PeerRun {
  /** Process start until the kernel set holds all N, ms. */
  readyMs: number;
  peakMB: number;
}

export interface PeerFigure {
  size: number;
  peer: 'crowdsec' | 'wcf-agent';
  version: string;
  runs: PeerRun[];
  median: PeerRun;
}

/** Elements of a named nftables set in a namespace (one `nft list set`); 0 while it does not exist. */
function setSize(ns: string, family: string, table: string, set: string): number {
  let out: string;
  try {
    out = execFileSync('ip', ['netns', 'exec', ns, 'nft', 'list', 'set', family, table, set], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return 0; // not created yet
  }
  const start = out.indexOf('elements = {');
  if (start === -1) return 0;
  const body = out.slice(start + 12, out.indexOf('}', start));
  let n = 1;
  for (let i = 0; i < body.length; i++) if (body.charCodeAt(i) === 44) n++;
  return n;
}

/** Where one enforcer keeps its entries: the agent splits them between a set of addresses and a set of networks. */
export interface KernelSets {
  ns: string;
  family: string;
  table: string;
  sets: readonly string[];
}

const kernelCount = (k: KernelSets) => k.sets.reduce((n, set) => n + setSize(k.ns, k.family, k.table, set), 0);

/** What a wait was for, for its messages: `wcf-agent 10000 (wcf_agent: wcf-blocklist + wcf-blocklist-nets)`. */
const waitName = (who: string, k: KernelSets) => `${who} (${k.table}: ${k.sets.join(' + ')})`;

/** A wait that says where it stands this often, so a slow side never runs silent. */
const PROGRESS_EVERY_MS = 30_000;

/**
 * The time of the first poll that saw `want()` elements across the sets (undefined while not
 * known yet). Fails loudly with what the sets hold when the enforcer exits, when `failed()`
 * gives a reason (its first cycle failed), or when the deadline passes.
 */
export async function untilSets(o: { who: string; kernel: KernelSets; want: () => number | undefined; failed?: () => Error | undefined; t0: number; pollMs: number; deadlineMs: number; alive: () => boolean }): Promise<number> {
  const seen: { at: number; n: number }[] = [];
  let toldAt = 0;
  const name = waitName(o.who, o.kernel);
  for (;;) {
    const n = kernelCount(o.kernel);
    const at = performance.now() - o.t0;
    seen.push({ at, n });
    const want = o.want();
    if (want !== undefined && n >= want) return seen.find((s) => s.n >= want)!.at;
    const where = `${n} of ${want ?? '?'} in the sets after ${Math.round(at / 1000)} s`;
    const failure = o.failed?.();
    if (failure) throw new Error(`${name}: ${failure.message}; ${where}`);
    if (!o.alive()) throw new Error(`${name}: the enforcer exited; ${where}`);
    if (at > o.deadlineMs) throw new Error(`${name}: deadline of ${Math.round(o.deadlineMs / 1000)} s passed; ${where}`);
    if (at - toldAt >= PROGRESS_EVERY_MS) {
      toldAt = at;
      if (at > 0) log(`peers ${name}: ${where}`);
    }
    await new Promise((r) => setTimeout(r, o.pollMs));
  }
}

/**
 * How long one side may take before the run fails: two minutes plus 10 ms an entry (10k: 220 s;
 * 100k: 19 min, where Debian 12's bouncer took up to 7.1 min here).
 */
export function peerDeadlineMs(size: number): number {
  return 120_000 + 10 * size;
}

export interface PeerOptions {
  sizes: readonly number[];
  runs: number;
  agent: AgentForm;
  /** Give up on one side after this long (default peerDeadlineMs(size): CrowdSec 0.0.25 takes minutes at 100k). */
  deadlineMs?: number;
}

export async function benchPeers(o: PeerOptions): Promise<PeerFigure[]> {
  const pkg = crowdsecPackages();
  const figures: PeerFigure[] = [];
  const agentVersion = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')).version as string;
  for (const size of o.sizes) {
    const pollMs = size > 20_000 ? 500 : 100;
    const deadlineMs = o.deadlineMs ?? peerDeadlineMs(size);
    const sim = await startSimulatorProcess(size, 1, Math.floor(Date.now() / 1000) + 30 * 86_400);
    const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-peers-'));
    const ns = `wcfpeer-wcf-${process.pid}`;
    execFileSync('ip', ['netns', 'add', ns]);
    const forget = onExit(() => {
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    });
    try {
      await sim.setAgentConfig({ maximum_rules: size, score_threshold: 1, sync_time: 60 });
      const wcf: PeerRun[] = [];
      let cidrs: string[] = [];
      for (let i = 0; i < o.runs; i++) {
        execFileSync('ip', ['netns', 'exec', ns, 'nft', 'flush', 'ruleset']);
        const stateDir = join(dir, `state-${i}`);
        const configPath = join(dir, 'config.json');
        writeFileSync(configPath, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: ns, state_dir: stateDir, maximum_rules: size, score_threshold: 1, jitter_seconds: 0 }));
        const t0 = performance.now();
        const d = startDaemon(o.agent, configPath, 60_000);
        try {
          // Every indicator is selected but a few (allow decisions). The kernel's count once the first
          // cycle is done is final: it is N (the applied entries, overlaps resolved, across both sets).
          const kernel: KernelSets = { ns, family: 'inet', table: 'wcf_agent', sets: ['wcf-blocklist', 'wcf-blocklist-nets'] };
          let applied: number | undefined;
          let inKernel: number | undefined;
          let failed: Error | undefined;
          void d.nextCycle().then(
            (c) => {
              applied = c.applied;
              inKernel = kernelCount(kernel);
            },
            (err: Error) => (failed = err),
          );
          const readyMs = await untilSets({ who: `wcf-agent ${size}`, kernel, want: () => inKernel, failed: () => failed, t0, pollMs, deadlineMs, alive: () => d.child.exitCode === null });
          if (!inKernel) throw new Error(`${waitName(`wcf-agent ${size}`, kernel)}: the first cycle applied ${applied} entries and the sets hold none`);
          const run = { readyMs, peakMB: procMemory(d.child.pid!).hwmMB };
          wcf.push(run);
          log(`peers wcf-agent ${size}: ${applied} applied, ${inKernel} in the sets after ${run.readyMs.toFixed(0)} ms, peak RSS ${run.peakMB.toFixed(0)} MB`);
        } finally {
          await d.stop();
        }
        cidrs = (JSON.parse(readFileSync(join(stateDir, 'applied-nftables.json'), 'utf8')) as { entries: { cidr: string }[] }).entries.map((e) => e.cidr);
      }
      figures.push({ size, peer: 'wcf-agent', version: agentVersion, runs: wcf, median: { readyMs: median(wcf.map((r) => r.readyMs)), peakMB: median(wcf.map((r) => r.peakMB)) } });

      // The 0.0.25 bouncer's set has no interval flag: a range becomes its first address, so count distinct first addresses.
      const want = new Set(cidrs.map((c) => c.split('/')[0])).size;
      const cs: PeerRun[] = [];
      for (let i = 0; i < o.runs; i++) {
        const run = await startCrowdsec(pkg, cidrs, 60_000);
        try {
          const t0 = performance.now();
          const b = run.bouncer;
          const kernel: KernelSets = { ns: run.ns, family: 'ip', table: 'crowdsec', sets: ['crowdsec-blacklists'] };
          const readyMs = await untilSets({ who: `crowdsec ${size}`, kernel, want: () => want, t0, pollMs, deadlineMs, alive: () => b.exitCode === null });
          const r = { readyMs, peakMB: procMemory(b.pid!).hwmMB };
          cs.push(r);
          log(`peers crowdsec ${size}: ${want} in the set after ${r.readyMs.toFixed(0)} ms, peak RSS ${r.peakMB.toFixed(0)} MB`);
        } finally {
          await run.close();
        }
      }
      figures.push({ size, peer: 'crowdsec', version: `crowdsec ${pkg.versions.crowdsec}, crowdsec-firewall-bouncer ${pkg.versions.bouncer}`, runs: cs, median: { readyMs: median(cs.map((r) => r.readyMs)), peakMB: median(cs.map((r) => r.peakMB)) } });
    } finally {
      await sim.close();
      forget();
      execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return figures;
}
