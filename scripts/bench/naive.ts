/**
 * The naive way, for contrast: one `iptables -A` process per address (what a
 * simple wrapper around iptables does). Run by a shell loop inside the
 * namespace, so each address costs exactly one iptables process (no
 * `ip netns exec` per address, no Node spawn): this is the cheapest form of
 * that approach. Larger sizes are extrapolated linearly from the largest
 * measured one, which understates them: every `-A` also reads the growing
 * chain, so the cost per address rises with the chain's length.
 */
import type { BenchNetns } from './netns.js';
import { makeEntries } from './apply.js';
import { log, median, timed } from './stats.js';

const CHAIN = 'WCF-NAIVE';
const LOOP = `while read -r a; do iptables -w -A ${CHAIN} -s "$a" -j DROP || exit 1; done`;

export interface NaiveFigure {
  size: number;
  extrapolated: boolean;
  runsMs: number[];
  medianMs: number;
  perAddressMs: number;
}

export async function benchNaive(ns: BenchNetns, sizes: readonly number[], extrapolateTo: readonly number[], runs: number): Promise<NaiveFigure[]> {
  const out: NaiveFigure[] = [];
  for (const n of sizes) {
    const addresses = makeEntries(n)
      .map((e) => e.cidr)
      .join('\n');
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      await ns.reset();
      await ns.exec('iptables', ['-N', CHAIN]);
      times.push((await timed(() => ns.exec('sh', ['-c', LOOP], `${addresses}\n`))).ms);
      const rules = (await ns.exec('iptables', ['-S', CHAIN])).split('\n').length - 1;
      if (rules !== n) throw new Error(`naive ${n}: ${rules} rules in the chain`);
      log(`naive iptables ${n}: ${times.at(-1)!.toFixed(0)} ms`);
    }
    await ns.reset();
    const m = median(times);
    out.push({ size: n, extrapolated: false, runsMs: times, medianMs: m, perAddressMs: m / n });
  }
  const base = out.at(-1);
  if (base) {
    for (const n of extrapolateTo) {
      if (out.some((f) => f.size === n)) continue;
      out.push({ size: n, extrapolated: true, runsMs: [], medianMs: base.perAddressMs * n, perAddressMs: base.perAddressMs });
    }
  }
  return out;
}
