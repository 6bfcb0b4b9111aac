/**
 * Benchmark: the ipset and nftables plugins' full apply into an empty state vs
 * a bare `ipset restore` / `nft -f` of the same pre-rendered entries.
 *
 *   npx tsx scripts/bench/standalone/apply.ts [--sizes 10000,100000] [--runs 3]
 *
 * Runs as root inside a network namespace it creates and removes (never the
 * machine's own ruleset). Prints the median of the runs and the ratio
 * plugin / bare per size. The full benchmark (`npm run bench`) includes this.
 */
import { benchApply } from '../apply.js';
import { cleanupNow, createBenchNetns } from '../netns.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i !== -1 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const sizes = arg('sizes', '10000,100000')
  .split(',')
  .map((s) => Number(s.trim()))
  .filter((n) => Number.isInteger(n) && n > 0);
const runs = Math.max(1, Number(arg('runs', '3')) || 3);

async function main(): Promise<void> {
  const ns = await createBenchNetns();
  const results = await benchApply({ runner: ns.runner, sizes, runs, backends: ['ipset', 'nftables'] });
  const rows = [['size', 'backend', 'plugin ms', 'bare ms', 'ratio']];
  for (const r of results) rows.push([String(r.size), r.backend, r.pluginMedianMs.toFixed(0), r.bareMedianMs.toFixed(0), r.ratio.toFixed(2)]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) console.log(r.map((c, i) => c.padStart(widths[i]!)).join('  '));
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanupNow);
