/**
 * Benchmark: the ipset and nftables plugins' full apply into an empty state vs
 * a bare `ipset restore` / `nft -f` of the same pre-rendered entries.
 *
 *   npx tsx scripts/bench-apply.ts [--sizes 10000,100000] [--runs 3]
 *
 * Runs as root inside a network namespace it creates and removes (never the
 * machine's own ruleset). Prints the median of the runs and the ratio
 * plugin / bare per size. Target: ipset plugin <= 1.5x bare at 100,000.
 */
import { execa } from 'execa';
import pino from 'pino';
import { createRunner } from '../src/firewall/exec.js';
import { IpsetPlugin } from '../src/firewall/ipset.js';
import { NftablesPlugin } from '../src/firewall/nftables.js';
import {
  ipsetSizing,
  nftHooks,
  normalizeEntries,
  pushIpsetAdds,
  renderIpsetCreate,
  renderNftRecreate,
  resolveOverlaps,
} from '../src/firewall/render.js';
import type { FirewallEntry, FirewallPlugin, PluginOptions } from '../src/firewall/types.js';
import { numberToIp } from '../src/net/ipv4.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i !== -1 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const sizes = arg('sizes', '10000,100000')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const runs = Math.max(1, Number(arg('runs', '3')) || 3);
const ns = `wcfb-${process.pid}`;
const names = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' } as const;

/** N random /32s (outside 100.64.0.0/10) plus N/1000 /24s inside 100.64.0.0/10: no overlaps. 2/3 carry a timeout. */
function makeEntries(n: number): FirewallEntry[] {
  const nets = Math.max(1, Math.floor(n / 1000));
  const seen = new Set<number>();
  const out: FirewallEntry[] = [];
  let seed = n * 2654435761;
  const rand = () => {
    // xorshift32: reproducible per size
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  while (out.length < n - nets) {
    const v = rand();
    const first = v >>> 24;
    if (first === 0 || first === 127 || first >= 224 || (first === 100 && ((v >>> 22) & 3) === 1) || seen.has(v)) continue;
    seen.add(v);
    out.push({ cidr: numberToIp(v), timeoutSeconds: out.length % 3 === 0 ? undefined : 3600 + (out.length % 1000) });
  }
  for (let i = 0; i < nets; i++) out.push({ cidr: `${numberToIp(((100 << 24) | (64 << 16) | (i << 8)) >>> 0)}/24` });
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function cleanup(): Promise<void> {
  await execa('ip', ['netns', 'del', ns], { reject: false });
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('run as root (creates a network namespace)');
  await execa('ip', ['netns', 'add', ns]);
  const runner = createRunner(['ip', 'netns', 'exec', ns]);
  const options = (capacity: number): PluginOptions => ({
    names,
    hookChains: ['INPUT', 'FORWARD'],
    action: 'DROP',
    logBlocked: false,
    capacity,
    logger: pino({ level: 'silent' }),
    runner,
  });

  const time = async (fn: () => Promise<unknown>): Promise<number> => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };

  const rows: string[][] = [['size', 'backend', 'plugin ms', 'bare ms', 'ratio']];
  for (const n of sizes) {
    const entries = makeEntries(n);
    const normalized = normalizeEntries(entries);

    // Pre-rendered bare inputs (rendering is not timed for the bare runs).
    const sizing = ipsetSizing(n, normalized.length);
    const ipsetLines = [renderIpsetCreate('bench-bare', sizing)];
    pushIpsetAdds(ipsetLines, 'bench-bare', normalized);
    ipsetLines.push('');
    const ipsetText = ipsetLines.join('\n');
    const nftText = renderNftRecreate(
      { table: 'bench_bare', set: names.setName, hooks: nftHooks(['INPUT', 'FORWARD']), action: 'DROP', logBlocked: false },
      resolveOverlaps(normalized),
    );

    const bench = async (label: string, plugin: FirewallPlugin, bare: () => Promise<unknown>, undoBare: () => Promise<unknown>) => {
      const p: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < runs; i++) {
        await plugin.flush();
        p.push(await time(() => plugin.apply(entries)));
        const listed = await plugin.list();
        if (listed.length !== normalized.length) throw new Error(`${label}: ${listed.length} entries in the kernel, expected ${normalized.length}`);
        await plugin.flush();
        b.push(await time(bare));
        await undoBare();
      }
      const pm = median(p);
      const bm = median(b);
      rows.push([String(n), label, pm.toFixed(0), bm.toFixed(0), (pm / bm).toFixed(2)]);
      console.error(`${label} ${n}: plugin ${p.map((x) => x.toFixed(0)).join('/')} ms, bare ${b.map((x) => x.toFixed(0)).join('/')} ms`);
    };

    await bench(
      'ipset',
      new IpsetPlugin(options(n)),
      () => runner.run('ipset', ['restore'], { input: ipsetText }),
      () => runner.run('ipset', ['destroy', 'bench-bare']),
    );
    await bench(
      'nftables',
      new NftablesPlugin(options(n)),
      () => runner.run('nft', ['-f', '-'], { input: nftText }),
      () => runner.run('nft', ['delete', 'table', 'inet', 'bench_bare']),
    );
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void cleanup().finally(() => process.exit(130));
  });
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanup);
