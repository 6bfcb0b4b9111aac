/**
 * Apply only: the ipset and nftables plugins' full apply into an empty state
 * vs a bare `ipset restore` / `nft -f` of the same pre-rendered entries (the
 * floor: what the kernel tool alone costs). Used by scripts/bench.ts and
 * scripts/bench/standalone/apply.ts.
 */
import pino from 'pino';
import { IpsetPlugin } from '../../src/firewall/ipset/plugin.js';
import { NftablesPlugin } from '../../src/firewall/nft/plugin.js';
import { normalizeEntries } from '../../src/firewall/entries.js';
import { ipsetSizing, renderIpsetCreate, writeIpsetAdds } from '../../src/firewall/ipset/text.js';
import { TextBuilder } from '../../src/util/text-builder.js';
import { resolveOverlaps } from '../../src/firewall/nft/overlaps.js';
import { NFT_PRIORITY, nftHooks } from '../../src/firewall/nft/text.js';
import { renderNftTable } from '../../src/firewall/nft/table/build.js';
import type { FirewallPlugin, PluginOptions } from '../../src/firewall/plugin.js';
import type { CommandRunner } from '../../src/exec/runner.js';
import type { FirewallEntry } from '../../src/firewall/entry.js';
import { fromNumber } from '../../src/net/ipv4.js';
import { log, median, timed } from './stats.js';

export type ApplyBackend = 'ipset' | 'nftables';

export interface ApplyResult {
  size: number;
  backend: ApplyBackend;
  /** Entries in the kernel after the apply. */
  entries: number;
  pluginMs: number[];
  bareMs: number[];
  pluginMedianMs: number;
  bareMedianMs: number;
  /** plugin / bare, of the medians. */
  ratio: number;
}

const names = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' } as const;

/** N random /32s (outside 100.64.0.0/10) plus N/1000 /24s inside 100.64.0.0/10: no overlaps. 2/3 carry a timeout. */
export function makeEntries(n: number): FirewallEntry[] {
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
    out.push({ cidr: fromNumber(v, 32), timeoutSeconds: out.length % 3 === 0 ? undefined : 3600 + (out.length % 1000) });
  }
  for (let i = 0; i < nets; i++) out.push({ cidr: fromNumber(((100 << 24) | (64 << 16) | (i << 8)) >>> 0, 24) });
  return out;
}

export interface ApplyBenchOptions {
  runner: CommandRunner;
  sizes: readonly number[];
  runs: number;
  backends: readonly ApplyBackend[];
}

/**
 * For each size and backend: `runs` times, flush, time the plugin's apply (and
 * check the kernel holds every entry), flush, time the bare tool, undo it.
 * Plugin and bare runs alternate so a slow moment of the shared machine hits both.
 */
export async function benchApply(o: ApplyBenchOptions): Promise<ApplyResult[]> {
  const { runner, runs } = o;
  const options = (): PluginOptions => ({
    names,
    hookChains: ['INPUT', 'FORWARD'],
    action: 'DROP',
    logBlocked: false,
    logger: pino({ level: 'silent' }),
    runner,
  });
  const results: ApplyResult[] = [];
  for (const n of o.sizes) {
    const entries = makeEntries(n);
    const count = normalizeEntries(entries).length;

    // The bare tool's input, pre-rendered (rendering is not timed for the bare runs). Made
    // per backend and dropped after, so this process holds no more than it must while the
    // plugin is timed (its heap size weighs on the plugin's garbage collection).
    const ipsetText = () => {
      const normalized = normalizeEntries(entries);
      const t = new TextBuilder();
      t.str(renderIpsetCreate('bench-bare', ipsetSizing(n, normalized.length))).byte(10);
      writeIpsetAdds(t, 'bench-bare', normalized);
      return t.toString();
    };
    const nftText = () =>
      'add table inet bench_bare\ndelete table inet bench_bare\n' +
      renderNftTable(
        { table: 'bench_bare', set: names.setName, nets: `${names.setName}-nets`, drops: `${names.setName}-drops`, hooks: nftHooks(['INPUT', 'FORWARD', 'OUTPUT']), priority: NFT_PRIORITY, stage: 'filter' as const, inbound: 'all' as const, forwardedOut: true, action: 'DROP', logBlocked: false, direction: 'both' },
        resolveOverlaps(normalizeEntries(entries)),
      ) +
      '\n';

    const bench = async (backend: ApplyBackend, plugin: FirewallPlugin, bare: () => Promise<unknown>, undoBare: () => Promise<unknown>) => {
      const p: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < runs; i++) {
        await plugin.flush();
        p.push((await timed(() => plugin.apply(entries, { capacity: n }))).ms);
        // Check the kernel holds every entry (not timed). Once per size for nftables: `nft -j list set`
        // is super-linear (a million elements take over a minute of nft's CPU).
        if (backend === 'ipset' || i === 0) {
          const listed = await plugin.list();
          if (listed.length !== count) throw new Error(`${backend}: ${listed.length} entries in the kernel, expected ${count}`);
        }
        await plugin.flush();
        b.push((await timed(bare)).ms);
        await undoBare();
      }
      const pm = median(p);
      const bm = median(b);
      results.push({ size: n, backend, entries: count, pluginMs: p, bareMs: b, pluginMedianMs: pm, bareMedianMs: bm, ratio: pm / bm });
      log(`apply ${backend} ${n}: plugin ${p.map((x) => x.toFixed(0)).join('/')} ms, bare ${b.map((x) => x.toFixed(0)).join('/')} ms, ratio ${(pm / bm).toFixed(2)}`);
    };

    if (o.backends.includes('ipset')) {
      const input = ipsetText();
      await bench(
        'ipset',
        new IpsetPlugin(options()),
        () => runner.run('ipset', ['restore'], { input }),
        () => runner.run('ipset', ['destroy', 'bench-bare']),
      );
    }
    if (o.backends.includes('nftables')) {
      const input = nftText();
      await bench(
        'nftables',
        new NftablesPlugin(options()),
        () => runner.run('nft', ['-f', '-'], { input }),
        () => runner.run('nft', ['delete', 'table', 'inet', 'bench_bare']),
      );
    }
  }
  return results;
}
