/**
 * Benchmark: what wcf-agent says against what the kernel holds, at scale (nftables).
 *
 *   npx tsx scripts/bench/standalone/truth.ts repair [--sizes 10000,100000,1000000]
 *   npx tsx scripts/bench/standalone/truth.ts churn [--sizes 100000,1000000] [--cycles 3]
 *   npx tsx scripts/bench/standalone/truth.ts down [--sizes 1000000] [--cycles 3] [--cli DIST/cli.js]
 *
 * `repair`: per size, a daemon restores an N-entry set from its state dir (85% addresses, 15%
 * /24 networks; no server: the API address refuses connections, so no cycle ever writes), then
 * another process changes the agent's objects or elements, one kind of change per daemon (a fresh
 * daemon each time, so the flapping guard never spaces the repairs out), and the time from that
 * command's return until the daemon logs the repair is measured. Also the cost of one
 * verification of the entries with nothing missing (another process's harmless transaction
 * prompts it): its duration, the CPU of the agent and its children over it (utime + stime of the
 * agent and of its waited-for children, from /proc), and the peak RSS of the agent and its
 * children, sampled every 100 ms.
 *
 * `down`: per size, a daemon over a restored N-entry set with its API unreachable, through
 * `--cycles` failing cycles after the first (one a minute of 20 s, or as the failure backoff
 * spaces them): the peak RSS of the agent and its children (sampled every 200 ms), and the
 * agent's RSS before and after them. Such a
 * cycle still tries its state report, built from the applied record. `--cli DIST/cli.js`: another
 * build of the agent, for a before/after in one sitting.
 *
 * `churn`: per size, a daemon against the bundled simulator (every indicator selected, a cycle
 * every 20 s) runs `--cycles` cycles quiet, then as many while another process adds a rule to a
 * table of its own once a second; prints each phase's cycle times (median, max) and the peak RSS
 * of the agent and its children (sampled every 200 ms).
 *
 * Runs as root inside network namespaces it creates and removes (never the machine's own
 * ruleset). Builds nothing: run `npm run build` first.
 */
import { readFileSync } from 'node:fs';
import { arg, CLI } from './common.js';
import { cpuSeconds, type Daemon, host, monitorPid, netns, network, prepare, startDaemon } from './daemon-lab.js';
import { treeSampler } from '../scale.js';
import { startSimulatorProcess } from '../simulator.js';

/**
 * No cycle during a measurement: the first (which fails: no server) runs at once at start, the next
 * an hour later. A failing cycle at a million reads the applied record back for its state report
 * (~400 MB); one that lands on a repair made the repair look slower and bigger than it is.
 */
const QUIET = { WCF_AGENT_MINUTE_MS: '3600000' };

const REPAIRED = /put back with the last applied set/;
const CHECKED = /^checked the agent’s entries in the kernel$/;

interface Kind {
  name: string;
  change(ns: Awaited<ReturnType<typeof netns>>, d: Daemon): Promise<void>;
}

const KINDS: Kind[] = [
  { name: 'one address deleted', change: (ns) => ns.exec('nft', ['delete', 'element', 'inet', 'wcf_agent', 'wcf-blocklist', `{ ${host(12345 % 5000)} }`]).then(() => undefined) },
  { name: 'one network deleted', change: (ns) => ns.exec('nft', ['delete', 'element', 'inet', 'wcf_agent', 'wcf-blocklist-nets', `{ ${network(7)} . ipv4 }`]).then(() => undefined) },
  { name: 'set of addresses flushed', change: (ns) => ns.exec('nft', ['flush', 'set', 'inet', 'wcf_agent', 'wcf-blocklist']).then(() => undefined) },
  { name: 'set of networks flushed', change: (ns) => ns.exec('nft', ['flush', 'set', 'inet', 'wcf_agent', 'wcf-blocklist-nets']).then(() => undefined) },
  { name: 'table deleted', change: (ns) => ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']).then(() => undefined) },
  { name: 'accept inserted before the drop', change: (ns) => ns.exec('nft', ['insert', 'rule', 'inet', 'wcf_agent', 'input', 'accept']).then(() => undefined) },
  {
    name: 'address deleted beside a change elsewhere',
    change: (ns) => ns.exec('nft', ['-f', '-'], `add table inet other\nadd chain inet other d\ndelete element inet wcf_agent wcf-blocklist { ${host(777)} }\n`).then(() => undefined),
  },
  {
    name: 'address deleted, event source down',
    async change(ns, d) {
      process.kill(await monitorPid(d.child.pid!), 'SIGKILL');
      await ns.exec('nft', ['delete', 'element', 'inet', 'wcf_agent', 'wcf-blocklist', `{ ${host(778)} }`]);
    },
  },
];

async function repair(): Promise<void> {
  const sizes = arg('sizes', '10000,100000,1000000').split(',').map(Number);
  const rows: string[] = [];
  for (const size of sizes) {
    const ns = await netns();
    // The cost of one verification with nothing missing.
    {
      const p = prepare(size, ns.name, { startup_delay_seconds: 0 });
      const d = startDaemon(p.config, QUIET);
      await d.next(/^watching the agent/, 0);
      const start = await d.next(CHECKED, 0); // the start's own verification
      await new Promise((r) => setTimeout(r, Math.max(3000, 1.5 * Number(start.rec.ms)))); // past the gap between verifications
      const sampler = treeSampler(d.child.pid!, 100);
      const cpu0 = cpuSeconds(d.child.pid!);
      const t0 = performance.now();
      await ns.exec('nft', ['add', 'table', 'inet', `probe${Date.now()}`]);
      const checked = await d.next(CHECKED, t0);
      const cpu = cpuSeconds(d.child.pid!) - cpu0;
      const peak = sampler.stop();
      rows.push(`${size}\tverification, nothing missing\t${Math.round(checked.at - t0)} ms from the change\tcheck ${String(checked.rec.ms)} ms\tcpu ${cpu.toFixed(2)} s\tpeak agent+children ${peak.treeMB.toFixed(0)} MB (children ${peak.childrenMB.toFixed(0)} MB, largest ${peak.largestChild})`);
      process.stderr.write(`${rows.at(-1)}\n`);
      await d.stop();
      await ns.exec('nft', ['flush', 'ruleset']);
    }
    const only = arg('kinds', '').split(',').filter(Boolean);
    for (const kind of KINDS.filter((k) => only.length === 0 || only.some((o) => k.name.includes(o)))) {
      const p = prepare(size, ns.name, { startup_delay_seconds: 0 });
      const d = startDaemon(p.config, QUIET);
      await d.next(/^watching the agent/, 0);
      const start = await d.next(CHECKED, 0);
      await new Promise((r) => setTimeout(r, Math.max(3000, 1.5 * Number(start.rec.ms))));
      const sampler = treeSampler(d.child.pid!, 100);
      const cpu0 = cpuSeconds(d.child.pid!);
      await kind.change(ns, d);
      const t0 = performance.now();
      const fixed = await d.next(REPAIRED, t0 - 5000);
      const cpu = cpuSeconds(d.child.pid!) - cpu0;
      const peak = sampler.stop();
      const r = fixed.rec;
      // What the daemon logged from the change to the repair, for where the time went.
      for (const l of d.lines.filter((x) => x.at >= t0 - 5000 && x.at <= fixed.at)) {
        const { msg, ms, why, found, checkMs, applyMs, mode, added, runs } = l.rec as Record<string, unknown>;
        process.stderr.write(`  ${((l.at - t0) / 1000).toFixed(2)} ${String(msg).slice(0, 90)} ${JSON.stringify({ ms, why, found, checkMs, applyMs, mode, added, runs })}\n`);
      }
      rows.push(`${size}\t${kind.name}\t${Math.round(fixed.at - t0)} ms to the repair\tcheck ${String(r.checkMs ?? '-')} ms, apply ${String(r.applyMs)} ms\tcpu ${cpu.toFixed(2)} s\tpeak agent+children ${peak.treeMB.toFixed(0)} MB`);
      process.stderr.write(`${rows.at(-1)}\n`);
      await d.stop();
      await ns.exec('nft', ['flush', 'ruleset']);
    }
  }
  process.stdout.write(`size\twhat\ttime\tdetail\tcpu\tmemory\n${rows.join('\n')}\n`);
}

async function churn(): Promise<void> {
  const sizes = arg('sizes', '100000,1000000').split(',').map(Number);
  const cycles = Number(arg('cycles', '3'));
  const rows: string[] = [];
  for (const size of sizes) {
    const ns = await netns();
    const sim = await startSimulatorProcess(Math.round(size * 1.25), 1, Math.floor(Date.now() / 1000) + 30 * 86_400);
    try {
      await sim.setAgentConfig({ maximum_rules: size, score_threshold: 1, sync_time: 1 });
      const p = prepare(0, ns.name, { agid: sim.agid, base_url: sim.url, token: sim.token, maximum_rules: size, score_threshold: 1 });
      // One minute is 20 s here: a cycle every 20 s after the last ended.
      const d = startDaemon(p.config, { WCF_AGENT_MINUTE_MS: '20000', WCF_LOG_LEVEL: 'info' });
      const phase = async (label: string) => {
        const sampler = treeSampler(d.child.pid!);
        const ms: number[] = [];
        let after = performance.now();
        for (let i = 0; i < cycles; i++) {
          const done = await d.next(/^cycle done$/, after, 1_200_000);
          ms.push(Number(done.rec.ms));
          after = done.at + 1;
        }
        const peak = sampler.stop();
        const sorted = [...ms].sort((a, b) => a - b);
        rows.push(`${size}\t${label}\tcycles ${ms.map((m) => (m / 1000).toFixed(1)).join(', ')} s\tmedian ${(sorted[Math.floor(sorted.length / 2)]! / 1000).toFixed(1)} s\tpeak agent+children ${peak.treeMB.toFixed(0)} MB`);
        process.stderr.write(`${rows.at(-1)}\n`);
      };
      await d.next(/^cycle done$/, 0, 1_200_000); // the first, full cycle
      await phase('quiet');
      await ns.exec('nft', ['-f', '-'], 'add table inet foreign\nadd chain inet foreign c\n');
      let stop = false;
      const loop = (async () => {
        while (!stop) {
          await ns.exec('nft', ['add', 'rule', 'inet', 'foreign', 'c', 'counter']);
          await new Promise((r) => setTimeout(r, 1000));
        }
      })();
      await phase('one foreign rule a second');
      stop = true;
      await loop;
      await d.stop();
    } finally {
      await sim.close();
    }
  }
  process.stdout.write(`size\tphase\tcycles\tmedian\tmemory\n${rows.join('\n')}\n`);
}

async function down(): Promise<void> {
  const sizes = arg('sizes', '1000000').split(',').map(Number);
  const cycles = Number(arg('cycles', '3'));
  const rows: string[] = [];
  for (const size of sizes) {
    const ns = await netns();
    const p = prepare(size, ns.name);
    const d = startDaemon(p.config, { WCF_AGENT_MINUTE_MS: '20000' }, arg('cli', CLI));
    // From the end of the first failed cycle (the start's restore writes the whole set: its peak is not this one's).
    let after = (await d.next(/^state report failed/, 0, 600_000)).at + 1;
    const rss = () => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${d.child.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
    const rss0 = rss();
    const sampler = treeSampler(d.child.pid!);
    for (let i = 0; i < cycles; i++) after = (await d.next(/^state report failed/, after, 600_000)).at + 1;
    const peak = sampler.stop();
    rows.push(`${size}\t${cycles} failed cycles after the first\tpeak agent+children ${peak.treeMB.toFixed(0)} MB (children ${peak.childrenMB.toFixed(0)} MB)\tagent RSS ${rss0.toFixed(0)} MiB before, ${rss().toFixed(0)} MiB after`);
    process.stderr.write(`${rows.at(-1)}\n`);
    await d.stop();
    await ns.exec('nft', ['flush', 'ruleset']);
  }
  process.stdout.write(`size\tphase\tmemory\tagent\n${rows.join('\n')}\n`);
}

const mode = process.argv[2];
if (mode === 'repair') await repair();
else if (mode === 'churn') await churn();
else if (mode === 'down') await down();
else {
  process.stderr.write('usage: truth.ts repair|churn|down [--sizes N,N]\n');
  process.exit(2);
}
process.exit(0);
