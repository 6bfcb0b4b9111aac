/**
 * Benchmark: the daemon's watcher (putting its objects back between cycles).
 *
 *   npx tsx scripts/bench/standalone/watch.ts latency [--sizes 10000,100000] [--runs 10] [--backends nftables,ipset]
 *   npx tsx scripts/bench/standalone/watch.ts idle [--minutes 10] [--size 10000]
 *
 * `latency`: per backend and size, a daemon restores an N-entry set from its
 * state dir (no server: the API address refuses connections), then another
 * tool removes its objects (nftables: `nft delete table inet wcf_agent`;
 * ipset: `iptables -F WCF-AGENT && ipset destroy wcf-blocklist`) and the time
 * from that command's return until the objects are back with N entries is
 * measured. A fresh daemon per run, so the flapping guard never spaces the
 * runs out. Prints the median and the range.
 *
 * `idle`: four idle daemons side by side (ipset and nftables, watching on and
 * off) for the given minutes; prints each one's CPU seconds (its own, and its
 * waited-for children's: the periodic checks' commands).
 *
 * Runs as root inside network namespaces it creates and removes (never the
 * machine's own ruleset). Builds nothing: run `npm run build` first.
 */
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { onExit } from '../netns.js';
import { arg, benchNetns, CLI } from './common.js';

type Backend = 'ipset' | 'nftables';
const NODE = process.execPath;

const netns = () => benchNetns('wcfbw');

/** A config and a state dir holding an applied set of `size` entries (198.18.0.0/15 and 100.64.0.0/10 hosts). */
function prepare(backend: Backend, size: number, ns: string, watch: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-watch-'));
  mkdirSync(join(dir, 'state'), { mode: 0o700 });
  const now = Math.floor(Date.now() / 1000);
  const entries = [];
  for (let i = 0; i < size; i++) {
    const n = (100 << 24) + (64 << 16) + i; // 100.64.0.0 + i
    entries.push({ cidr: `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`, reason: 'score', expiresAt: now + 86_400 });
  }
  writeFileSync(join(dir, 'state', `applied-${backend}.json`), JSON.stringify({ ts: now, plugin: backend, entries }));
  const config = {
    agid: 'bench',
    token: 'bench-token',
    base_url: 'http://127.0.0.1:9/api/v1', // refuses connections: no cycle ever applies
    state_dir: join(dir, 'state'),
    plugin: backend,
    netns: ns,
    retries: 0,
    jitter_seconds: 0,
    maximum_rules: Math.max(size, 1000),
    watch_interval_seconds: watch,
    log_format: 'json',
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config), { mode: 0o600 });
  return join(dir, 'config.json');
}

interface Daemon {
  child: ResultPromise;
  lines: string[];
  waitFor(re: RegExp, ms?: number): Promise<void>;
  stop(): Promise<void>;
}

function startDaemon(configPath: string): Daemon {
  const child = execa(NODE, [CLI, 'run', '--config', configPath], { reject: false, buffer: false, env: { WCF_AGENT_MINUTE_MS: '60000', WCF_LOG_LEVEL: 'info' } });
  onExit(() => child.kill('SIGKILL'));
  const lines: string[] = [];
  let buf = '';
  let exited = false;
  void child.then(() => (exited = true));
  child.stderr!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  return {
    child,
    lines,
    async waitFor(re, ms = 120_000) {
      const deadline = Date.now() + ms;
      while (!lines.some((l) => re.test(l))) {
        if (exited || Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${lines.slice(-10).join('\n')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      child.kill('SIGTERM');
      await child;
    },
  };
}

async function objectsBack(exec: (f: string, a: string[]) => Promise<string>, backend: Backend, size: number): Promise<boolean> {
  try {
    if (backend === 'nftables') return (await exec('nft', ['list', 'tables'])).includes('inet wcf_agent'); // one transaction: table and elements together
    const header = await exec('ipset', ['list', '-t', 'wcf-blocklist']);
    if (Number(/Number of entries: (\d+)/.exec(header)?.[1]) !== size) return false;
    return (await exec('iptables', ['-S', 'WCF-AGENT'])).includes('--match-set wcf-blocklist');
  } catch {
    return false;
  }
}

async function latency(): Promise<void> {
  const sizes = arg('sizes', '10000,100000').split(',').map(Number);
  const runs = Number(arg('runs', '10'));
  const backends = arg('backends', 'nftables,ipset').split(',') as Backend[];
  for (const backend of backends) {
    for (const size of sizes) {
      const ns = await netns();
      const times: number[] = [];
      for (let r = 0; r < runs; r++) {
        const d = startDaemon(prepare(backend, size, ns.name, 5));
        await d.waitFor(/watching the agent/);
        if (!(await objectsBack(ns.exec, backend, size))) throw new Error('objects not in place after the restore');
        if (backend === 'nftables') await ns.exec('nft', ['delete', 'table', 'inet', 'wcf_agent']);
        // The kernel lets go of the set a moment after its rule is gone (the agent's own flush retries the same way).
        else await ns.exec('sh', ['-c', 'iptables -F WCF-AGENT && for i in $(seq 50); do ipset destroy wcf-blocklist 2>/dev/null && exit 0; sleep 0.01; done; exit 1']);
        const t0 = performance.now();
        while (!(await objectsBack(ns.exec, backend, size))) {
          if (performance.now() - t0 > 60_000) throw new Error('not repaired within 60 s');
        }
        times.push(performance.now() - t0);
        await d.waitFor(/put back with the last applied set/);
        await d.stop();
      }
      times.sort((a, b) => a - b);
      const median = (times[Math.floor((runs - 1) / 2)]! + times[Math.ceil((runs - 1) / 2)]!) / 2;
      console.log(`${backend} ${size} entries: repair latency median ${median.toFixed(0)} ms (min ${times[0]!.toFixed(0)}, max ${times.at(-1)!.toFixed(0)}, ${runs} runs)`);
    }
  }
}

/** utime+stime and cutime+cstime of a process, in seconds. */
function cpuSeconds(pid: number): { self: number; children: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = 100; // USER_HZ
  return { self: (Number(f[11]) + Number(f[12])) / tick, children: (Number(f[13]) + Number(f[14])) / tick };
}

async function idle(): Promise<void> {
  const minutes = Number(arg('minutes', '10'));
  const size = Number(arg('size', '10000'));
  const daemons: { label: string; d: Daemon; start?: { self: number; children: number } }[] = [];
  for (const backend of ['ipset', 'nftables'] as const) {
    for (const watch of [5, 0]) {
      const ns = await netns();
      daemons.push({ label: `${backend} watch ${watch ? 'on (5 s)' : 'off'}`, d: startDaemon(prepare(backend, size, ns.name, watch)) });
    }
  }
  // Settled: the restore and the first (failing) cycle are done.
  for (const x of daemons) await x.d.waitFor(/sync failed/);
  await new Promise((r) => setTimeout(r, 5000));
  for (const x of daemons) x.start = cpuSeconds(x.d.child.pid!);
  await new Promise((r) => setTimeout(r, minutes * 60_000));
  for (const x of daemons) {
    const end = cpuSeconds(x.d.child.pid!);
    console.log(
      `${x.label}, ${size} entries, ${minutes} idle min: daemon ${(end.self - x.start!.self).toFixed(2)} CPU s, its commands ${(end.children - x.start!.children).toFixed(2)} CPU s`,
    );
    await x.d.stop();
  }
}

(process.argv[2] === 'idle' ? idle() : latency())
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => process.exit());
