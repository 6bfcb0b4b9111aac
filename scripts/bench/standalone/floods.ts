/**
 * Benchmark: what Prometheus, the kubelet and a hostile local user cost the agent, at scale
 * (nftables).
 *
 *   npx tsx scripts/bench/standalone/floods.ts [--sizes 100000,1000000] [--seconds 8] [--cli DIST/cli.js]
 *
 * Per size, a daemon restores an N-entry set from its state dir (no server: the API address
 * refuses connections, so no cycle ever writes) with its metrics listener on loopback, then, one
 * load after the other:
 *   - four scrapes of /metrics 2 s apart (how the review found one `nft` listing per scrape);
 *   - 60 clients scraping /metrics back to back for `--seconds`;
 *   - 60 keep-alive clients asking /readyz back to back for `--seconds`;
 *   - 300 clients asking /readyz at once and again for `--seconds`, past the listener's cap of 64
 *     connections (the refused ones are counted, not retried);
 * and prints per load the answers, their latency (median, 99th percentile, max), the peak number of
 * the agent's children and the peak RSS of the agent and its children (sampled every 100 ms).
 *
 * `--cli`: another build of the agent, for a before/after on one machine in one sitting.
 *
 * Runs as root inside a network namespace it creates and removes. Builds nothing: run
 * `npm run build` first.
 */
import { Agent, request } from 'undici';
import { arg, CLI } from './common.js';
import { netns, prepare, startDaemon } from './daemon-lab.js';
import { treeSampler } from '../scale.js';

interface Load {
  name: string;
  path: '/metrics' | '/readyz';
  clients: number;
  /** Every client's requests, one after the other, for this long (0: one request each). */
  forMs: number;
  /** Rounds of one request per client, this far apart (instead of `forMs`). */
  rounds?: { count: number; everyMs: number };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function runLoad(base: string, pid: number, load: Load): Promise<string> {
  const sampler = treeSampler(pid, 100);
  // Each client its own connection (a pool of one), as separate scrapers and probes are.
  const agents = Array.from({ length: load.clients }, () => new Agent({ connections: 1 }));
  const ms: number[] = [];
  let refused = 0;
  let failed = 0;
  const once = async (agent: Agent) => {
    const t0 = performance.now();
    try {
      const res = await request(`${base}${load.path}`, { dispatcher: agent });
      await res.body.arrayBuffer();
      if (res.statusCode === 200) ms.push(performance.now() - t0);
      else failed++;
    } catch {
      refused++; // the listener closed the connection on accept (its cap), or reset it
    }
  };
  if (load.rounds) {
    for (let r = 0; r < load.rounds.count; r++) {
      const t = performance.now();
      await Promise.all(agents.map(once));
      await new Promise((res) => setTimeout(res, Math.max(0, load.rounds!.everyMs - (performance.now() - t))));
    }
  } else {
    const end = performance.now() + load.forMs;
    await Promise.all(agents.map(async (a) => {
      while (performance.now() < end) await once(a);
    }));
  }
  const peak = sampler.stop();
  await Promise.all(agents.map((a) => a.close()));
  const sorted = ms.sort((a, b) => a - b);
  const f = (v: number) => (v < 10 ? v.toFixed(1) : v.toFixed(0));
  return `${load.name}\t${sorted.length} answered, ${failed} not 200, ${refused} refused or reset\tlatency median ${f(pct(sorted, 50))} ms, p99 ${f(pct(sorted, 99))} ms, max ${f(sorted.at(-1) ?? NaN)} ms\tchildren at most ${peak.peakChildren}\tpeak agent+children ${peak.treeMB.toFixed(0)} MB (children ${peak.childrenMB.toFixed(0)} MB)`;
}

const sizes = arg('sizes', '100000,1000000').split(',').map(Number);
const forMs = Number(arg('seconds', '8')) * 1000;
const LOADS: Load[] = [
  { name: '4 scrapes 2 s apart', path: '/metrics', clients: 1, forMs: 0, rounds: { count: 4, everyMs: 2000 } },
  { name: '60 scrapers back to back', path: '/metrics', clients: 60, forMs },
  { name: '60 readiness probes back to back', path: '/readyz', clients: 60, forMs },
  { name: '300 readiness clients (cap 64)', path: '/readyz', clients: 300, forMs },
];
const rows: string[] = [];
for (const size of sizes) {
  const ns = await netns();
  const p = prepare(size, ns.name, { metrics_listen: '127.0.0.1:0' });
  // A minute of an hour: the cycle at start (which fails, no server) and then none during the
  // loads, so their peaks are the loads' (a failing cycle at a million costs its own ~400 MB:
  // the state report reads the applied record back; see docs/nftables-at-scale.md).
  const d = startDaemon(p.config, { WCF_AGENT_MINUTE_MS: '3600000' }, arg('cli', CLI));
  const listening = await d.next(/^metrics listening on /, 0);
  const base = /(http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(String(listening.rec.msg))![1]!;
  // Past the start: the set restored and the start's own verification done (builds before the
  // verification existed: the watcher started, then a few seconds).
  await d.next(/^watching the agent/, 0);
  await d.next(/^checked the agent’s entries in the kernel$/, 0, 5000 + size / 10).catch(() => undefined);
  const idle = treeSampler(d.child.pid!, 100);
  await new Promise((r) => setTimeout(r, 2000));
  const quiet = idle.stop();
  rows.push(`${size}\tidle 2 s\t-\t-\tchildren at most ${quiet.peakChildren}\tpeak agent+children ${quiet.treeMB.toFixed(0)} MB`);
  for (const load of LOADS) {
    const from = d.lines.length;
    rows.push(`${size}\t${await runLoad(base, d.child.pid!, load)}`);
    process.stderr.write(`${rows.at(-1)}\n`);
    // What the daemon did meanwhile (its own work, not the load's), for where the memory went.
    for (const l of d.lines.slice(from).filter((x) => Number(x.rec.level) >= 30)) process.stderr.write(`  daemon: ${String(l.rec.msg).slice(0, 120)}\n`);
  }
  await d.stop();
  await ns.exec('nft', ['flush', 'ruleset']);
}
process.stdout.write(`size\tload\tanswers\tlatency\tchildren\tmemory\n${rows.join('\n')}\n`);
process.exit(0);
