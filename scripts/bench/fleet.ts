/**
 * The fleet benchmark (`npm run bench -- --only fleet`): what agents cost one API. The agent's own
 * daemon (src/agent/daemon.ts: scheduler, start-up delay, decision polls, cycles) and API client,
 * with the dry-run backend, against the simulator in this process, in virtual time
 * (virtual-clock.ts): a thousand daemons and whole days in minutes on two cores. As processes the
 * machine holds about a hundred agents (each ~40 MB), a day would take a day, and a shortened
 * minute would also shorten the very delays being measured.
 *
 * - Bytes per host per day: one daemon for 24 virtual hours after an hour of warm-up, the
 *   simulator counting the bytes of every call (headers included), the agent's defaults
 *   (sync_time 15 from the server's stored config, decision polls every 30 s, a full re-pull a
 *   day, report_max_kb 256), 1,000 manual blocks and 200 whitelisted, at N indicators all
 *   selected (fresh, score 10, threshold 1, maximum_rules N), with 1% of them re-stamped every
 *   hour (in 5-minute steps) or none (idle); without and with validators (ETag) at the server.
 * - The fleet: H daemons (small feed: the timing does not depend on its size) started over one
 *   sync interval, steady state over the next interval, then all restarted in the same second, once
 *   with startup_delay_seconds 0 (the behaviour before) and once with the default 60.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Daemon } from '../../src/agent/daemon/daemon.js';
import type { DaemonParts } from '../../src/agent/daemon/parts.js';
import { StateStore } from '../../src/agent/state/store.js';
import { parseConfig, type AgentConfig } from '../../src/config/load.js';
import { createApi, openPlugin } from '../../src/cli/context.js';
import { startSimulator, type CallEntry, type ConditionalMode, type Simulator } from '../../test/simulator/index.js';
import { VirtualClock } from './virtual-clock.js';
import { log } from './stats.js';

const MIN = 60_000;
/** State dirs in memory where there is one: a thousand agents' fsyncs on a shared disk measure the disk, not the API. */
const TMP = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const HOUR = 60 * MIN;
const SYNC_MINUTES = 15;
/** What is looked at after a restart: the start-up delay (at most a minute by default) and the polls' first round. */
const RESTART_WINDOW = 5 * MIN;

export interface HostDayFigure {
  size: number;
  churn: boolean;
  conditional: ConditionalMode | 'none';
  /** The server compresses answers and takes gzip request bodies. */
  gzip: boolean;
  /** sync_time the server's stored configuration gives, minutes. */
  syncMinutes: number;
  applied: number;
  bytesPerDay: number;
  requestsPerDay: number;
  /** Bytes and calls per day by what they were for. */
  byKind: Record<string, { bytes: number; calls: number }>;
  realSeconds: number;
}

export interface RestartFigure {
  startupDelaySeconds: number;
  /** Hosts with any API call in the busiest second of the 5 minutes after the restart. */
  busiestHosts: number;
  /** Hosts starting a sync (the agent-record call) in the busiest second. */
  busiestSyncs: number;
  busiestRequests: number;
  meanRequestsPerSecond: number;
  /** Seconds until every host had synced. */
  allSyncedAfter: number;
}

export interface FleetResult {
  hosts: number;
  steady: { meanRequestsPerSecond: number; busiestRequests: number; busiestHosts: number; busiestSyncs: number; seconds: number };
  restarts: RestartFigure[];
  days: HostDayFigure[];
  realSeconds: number;
}

const quiet = pino({ level: 'error' }, pino.destination({ dest: 2, sync: true }));

const ip = (base: number, i: number) => `${(base >>> 24) & 255}.${(base >>> 16) & 255 | ((i >>> 16) & 255)}.${(i >>> 8) & 255}.${i & 255}`;
/** Fresh indicators 11.0.0.0/8 (N), manual blocks 45.10.0.0/16, whitelisted 45.20.0.0/16: public, never contacted. */
const feedIp = (i: number) => `11.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;

/** N fresh indicators (score 10, stamped over the last hour), the manual blocks and the whitelist. */
function seed(sim: Simulator, size: number, manual: number, white: number): void {
  const now = sim.clock.now();
  for (let i = 0; i < size; i++) sim.upsertIndicator({ ip: feedIp(i), score: 10, ts: now - 3600 + Math.floor((i * 3600) / size) });
  // Decisions made over the last hour too (a decision re-stamps its record: the ts set after it).
  const decided = (n: number) => now - 3600 + Math.floor((n * 3600) / Math.max(1, manual + white));
  for (let i = 0; i < manual; i++) {
    sim.setDecision(ip(0x2d0a0000, i), 1);
    sim.upsertIndicator({ ip: ip(0x2d0a0000, i), ts: decided(i) });
  }
  for (let i = 0; i < white; i++) {
    sim.setDecision(ip(0x2d140000, i), 0);
    sim.upsertIndicator({ ip: ip(0x2d140000, i), ts: decided(manual + i) });
  }
}

interface Host {
  dir: string;
  config: AgentConfig;
  daemon?: Daemon;
}

function host(sim: Simulator, extra: Record<string, unknown>, onRequest?: (route: string) => void): Host {
  const dir = mkdtempSync(join(TMP, 'wcf-fleet-'));
  const config = parseConfig(
    JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state'), watch_interval_seconds: 0, log_level: 'error', ...extra }),
    join(dir, 'config.json'),
  );
  const h: Host = { dir, config };
  h.daemon = daemonFor(h, onRequest);
  return h;
}

function daemonFor(h: Host, onRequest?: (route: string) => void): Daemon {
  return new Daemon({
    logger: quiet,
    initialConfig: h.config,
    reload: () => h.config,
    open: async (c): Promise<DaemonParts> => {
      const api = createApi(c, quiet);
      if (onRequest) api.client.onRequest = (info) => onRequest(`${info.method} ${info.route}`);
      const state = new StateStore(c.state_dir, quiet);
      return { config: c, state, api, plugin: await openPlugin(c, quiet, false) };
    },
  });
}

const kindOf = (c: CallEntry): string => {
  if (c.path.endsWith('/ips')) return c.query.filter === '0' ? 'score feed' : 'decision feeds';
  if (c.method === 'GET') return 'agent record';
  return 'state report';
};

/** One host for a virtual day: bytes and calls at the simulator. */
async function hostDay(size: number, churn: boolean, conditional: ConditionalMode | 'none', gzip: boolean, syncMinutes = SYNC_MINUTES): Promise<HostDayFigure> {
  const started = performance.now();
  const clock = new VirtualClock(Date.UTC(2026, 10, 25));
  clock.install();
  const byKind: Record<string, { bytes: number; calls: number }> = {};
  let counting = false;
  const sim = await startSimulator({
    indicators: 0,
    agentConfig: { maximum_rules: String(size), score_threshold: '1', sync_time: String(syncMinutes), running: 'true' },
    conditional: conditional === 'none' ? null : conditional,
    compression: gzip,
    requestLogSize: 16,
    onRequest: (c) => {
      if (!counting) return;
      const k = (byKind[kindOf(c)] ??= { bytes: 0, calls: 0 });
      k.bytes += c.bytesIn + c.bytesOut;
      k.calls++;
    },
  });
  let h: Host | undefined;
  try {
    seed(sim, size, 1000, 200);
    h = host(sim, {});
    await h.daemon!.start();
    const t0 = clock.nowMs();
    let changed = 0;
    const step = 5 * MIN;
    for (let t = t0 + step; t <= t0 + 25 * HOUR; t += step) {
      await clock.runUntil(t);
      if (t === t0 + HOUR) counting = true;
      if (churn) {
        // 1% of the indicators an hour, re-stamped now, in twelve steps.
        const n = Math.round(size / 100 / 12);
        for (let k = 0; k < n; k++) sim.upsertIndicator({ ip: feedIp((changed++ * 7919) % size), score: 10 });
      }
    }
    const applied = h.daemon ? (new StateStore(h.config.state_dir, quiet).small.lastCycle?.applied ?? 0) : 0;
    await h.daemon!.stop();
    const bytes = Object.values(byKind).reduce((n, k) => n + k.bytes, 0);
    const calls = Object.values(byKind).reduce((n, k) => n + k.calls, 0);
    return { size, churn, conditional, gzip, syncMinutes, applied, bytesPerDay: bytes, requestsPerDay: calls, byKind, realSeconds: (performance.now() - started) / 1000 };
  } finally {
    await sim.close();
    clock.uninstall();
    if (h) rmSync(h.dir, { recursive: true, force: true });
  }
}

/** Per virtual second: requests, and the hosts calling (any call, and starting a sync). */
class Seconds {
  readonly requests = new Map<number, number>();
  readonly hosts = new Map<number, Set<number>>();
  readonly syncs = new Map<number, Set<number>>();
  constructor(private readonly clock: VirtualClock) {}
  note(host: number, route: string): void {
    const s = Math.floor(this.clock.nowMs() / 1000);
    this.requests.set(s, (this.requests.get(s) ?? 0) + 1);
    let hs = this.hosts.get(s);
    if (!hs) this.hosts.set(s, (hs = new Set()));
    hs.add(host);
    if (route === 'GET /feedback') {
      let ss = this.syncs.get(s);
      if (!ss) this.syncs.set(s, (ss = new Set()));
      ss.add(host);
    }
  }
  window(fromMs: number, toMs: number) {
    const a = Math.floor(fromMs / 1000);
    const b = Math.floor(toMs / 1000);
    let total = 0;
    let busiestRequests = 0;
    let busiestHosts = 0;
    let busiestSyncs = 0;
    for (let s = a; s < b; s++) {
      const r = this.requests.get(s) ?? 0;
      total += r;
      busiestRequests = Math.max(busiestRequests, r);
      busiestHosts = Math.max(busiestHosts, this.hosts.get(s)?.size ?? 0);
      busiestSyncs = Math.max(busiestSyncs, this.syncs.get(s)?.size ?? 0);
    }
    return { meanRequestsPerSecond: total / Math.max(1, b - a), busiestRequests, busiestHosts, busiestSyncs, seconds: b - a };
  }
  /** Seconds from `fromMs` until every host of `n` had started a sync. */
  allSynced(fromMs: number, n: number): number {
    const seen = new Set<number>();
    const a = Math.floor(fromMs / 1000);
    for (let s = a; s < a + 24 * 3600; s++) {
      for (const h of this.syncs.get(s) ?? []) seen.add(h);
      if (seen.size >= n) return s - a;
    }
    return NaN;
  }
}

async function fleet(hosts: number, size: number): Promise<Pick<FleetResult, 'steady' | 'restarts'>> {
  const clock = new VirtualClock(Date.UTC(2026, 10, 25));
  clock.install();
  const sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: String(size), score_threshold: '1', sync_time: String(SYNC_MINUTES), running: 'true' }, requestLogSize: 16 });
  const fleet: Host[] = [];
  const seconds = new Seconds(clock);
  try {
    seed(sim, size, 100, 20);
    const t0 = clock.nowMs();
    // Hosts come up over one sync interval (as a fleet does), each with the defaults.
    const startAt = Array.from({ length: hosts }, (_, i) => ({ i, at: t0 + Math.random() * SYNC_MINUTES * MIN })).sort((a, b) => a.at - b.at);
    for (const { i, at } of startAt) {
      await clock.runUntil(at);
      const h = host(sim, {}, (route) => seconds.note(i, route));
      fleet[i] = h;
      await h.daemon!.start();
    }
    const steadyFrom = t0 + SYNC_MINUTES * MIN;
    await clock.runUntil(t0 + 2 * SYNC_MINUTES * MIN);
    const steady = seconds.window(steadyFrom, clock.nowMs());
    log(`fleet ${hosts}: steady ${steady.meanRequestsPerSecond.toFixed(1)} req/s, busiest second ${steady.busiestRequests} requests, ${steady.busiestHosts} hosts, ${steady.busiestSyncs} syncs`);
    const restarts: RestartFigure[] = [];
    for (const delay of [0, 60]) {
      // Everything stops and comes back in the same second (a rollout, a power event); the state stays.
      for (const h of fleet) await h.daemon!.stop();
      const at = clock.nowMs();
      fleet.forEach((h, i) => {
        h.config = { ...h.config, startup_delay_seconds: delay };
        h.daemon = daemonFor(h, (route) => seconds.note(i, route));
      });
      for (const h of fleet) await h.daemon!.start();
      await clock.runUntil(at + RESTART_WINDOW);
      const w = seconds.window(at, at + RESTART_WINDOW);
      const r = { startupDelaySeconds: delay, busiestHosts: w.busiestHosts, busiestSyncs: w.busiestSyncs, busiestRequests: w.busiestRequests, meanRequestsPerSecond: w.meanRequestsPerSecond, allSyncedAfter: seconds.allSynced(at, hosts) };
      restarts.push(r);
      log(`fleet ${hosts}: restart with startup_delay_seconds ${delay}: busiest second ${r.busiestSyncs} syncs, ${r.busiestHosts} hosts, ${r.busiestRequests} requests; all synced after ${r.allSyncedAfter} s`);
    }
    for (const h of fleet) await h.daemon!.stop();
    return { steady, restarts };
  } finally {
    await sim.close();
    clock.uninstall();
    for (const h of fleet) if (h) rmSync(h.dir, { recursive: true, force: true });
  }
}

export interface FleetOptions {
  hosts: number;
  /** Feed sizes for bytes per host per day. */
  sizes: readonly number[];
}

export async function benchFleet(o: FleetOptions): Promise<FleetResult> {
  const started = performance.now();
  const days: HostDayFigure[] = [];
  // Up to 100k: idle (a plain server, then what a server can offer: ETags, gzip, both; and
  // an hourly sync_time) and changing (plain, and ETags with gzip). At 1M changing, plain and
  // with ETags and gzip: the feed's own pulls dominate there, and a simulated day takes minutes.
  const runs: [number, boolean, ConditionalMode | 'none', boolean, number][] = [];
  for (const size of o.sizes) {
    if (size <= 100_000) runs.push([size, false, 'none', false, SYNC_MINUTES], [size, false, 'etag', false, SYNC_MINUTES], [size, false, 'none', true, SYNC_MINUTES], [size, false, 'etag', true, SYNC_MINUTES], [size, false, 'none', false, 60]);
    runs.push([size, true, 'none', false, SYNC_MINUTES], [size, true, 'etag', true, SYNC_MINUTES]);
  }
  for (const [size, churn, conditional, gzip, syncMinutes] of runs) {
    const d = await hostDay(size, churn, conditional, gzip, syncMinutes);
    days.push(d);
    log(`fleet: host at ${size}${churn ? ', 1%/h changing' : ', idle'}, sync_time ${syncMinutes}, validators ${conditional}${gzip ? ', gzip' : ''}: ${(d.bytesPerDay / 1e6).toFixed(1)} MB/day in ${d.requestsPerDay} calls (${d.applied} applied; ${d.realSeconds.toFixed(0)} s real)`);
  }
  const f = await fleet(o.hosts, 1000);
  return { hosts: o.hosts, ...f, days, realSeconds: (performance.now() - started) / 1000 };
}
