/**
 * Benchmark: networks withdrawn from the nftables backend at scale, and what another tool's nft
 * commands wait meanwhile. The kernel finds each network it deletes from the agent's
 * concatenated interval set by walking the set (see src/firewall/nft/write.ts), and holds the
 * ruleset's lock for a whole transaction.
 *
 *   npx tsx scripts/bench/standalone/withdraw.ts [--sizes 10000,100000,1000000] [--share 0.01]
 *
 * Per size (85% addresses, 15% /24 networks, as the simulator's feed): the plugin applies all of
 * it; then the same minus `share` of the networks, timed, with its `nft -f` runs timed one by one;
 * meanwhile a bystander adds an element to its own table's set every 100 ms and its waits are
 * recorded. Then the same deletions as one bare transaction (what the agent sent before it split
 * them), with the bystander again. Runs as root in a namespace it creates and removes.
 */
import pino from 'pino';
import { execa } from 'execa';
import { NftablesPlugin } from '../../../src/firewall/nft/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import type { FirewallEntry } from '../../../src/firewall/entry.js';
import { fromNumber } from '../../../src/net/ipv4.js';
import { cleanupNow, createBenchNetns, type BenchNetns } from '../netns.js';
import { median } from '../stats.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i !== -1 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

/**
 * `n` entries: 85% random addresses, 15% distinct random /24s (reproducible), permanent: a
 * timeout given again after the first apply's minutes would count as changed and be re-sent.
 */
function feed(n: number): { hosts: FirewallEntry[]; nets: FirewallEntry[] } {
  let seed = 0x9e3779b9 ^ n;
  const rand = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  const usable = (v: number) => v >>> 24 !== 0 && v >>> 24 !== 127 && v >>> 24 < 224;
  const nets = new Map<number, FirewallEntry>();
  while (nets.size < Math.round(n * 0.15)) {
    const v = (rand() & 0xffffff00) >>> 0;
    if (usable(v) && !nets.has(v)) nets.set(v, { cidr: fromNumber(v, 24) });
  }
  const hosts = new Map<number, FirewallEntry>();
  while (hosts.size < n - nets.size) {
    const v = rand();
    if (usable(v) && !hosts.has(v)) hosts.set(v, { cidr: fromNumber(v, 32) });
  }
  return { hosts: [...hosts.values()], nets: [...nets.values()] };
}

/** Adds an element to a table of its own every 100 ms until stopped; answers each command's time (ms). */
function bystander(ns: BenchNetns): { stop(): Promise<number[]> } {
  const waits: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const t = performance.now();
      await execa('ip', ['netns', 'exec', ns.name, 'nft', 'add', 'element', 'inet', 'bystander', 's', `{ 198.18.${(i >> 8) & 255}.${i & 255} }`]);
      waits.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return waits;
    },
  };
}

async function main(): Promise<void> {
  const sizes = arg('sizes', '10000,100000,1000000').split(',').map(Number);
  const share = Number(arg('share', '0.01'));
  const ns = await createBenchNetns();
  const runs: Array<{ head: string; ms: number }> = [];
  const runner: CommandRunner = {
    scope: ns.runner.scope,
    async run(file, args, o) {
      const t = performance.now();
      try {
        return await ns.runner.run(file, args, o);
      } finally {
        if (file === 'nft' && args[0] === '-f') runs.push({ head: String(o?.input ?? '').slice(0, 60), ms: performance.now() - t });
      }
    },
  };
  const rows: string[] = [];
  for (const size of sizes) {
    await ns.reset();
    await ns.exec('nft', ['-f', '-'], 'add table inet bystander\nadd set inet bystander s { type ipv4_addr; }\n');
    const { hosts, nets } = feed(size);
    const plugin = new NftablesPlugin({ names: { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' }, hookChains: ['INPUT'], action: 'DROP', logBlocked: false, logger: pino({ level: 'silent' }), runner });
    const cap = { capacity: size * 2 };
    await plugin.apply([...hosts, ...nets], cap);
    // Every 1/share-th network withdrawn.
    const step = Math.max(1, Math.round(1 / share));
    const gone = nets.filter((_, i) => i % step === 0);
    const kept = nets.filter((_, i) => i % step !== 0);
    runs.length = 0;
    let by = bystander(ns);
    let t = performance.now();
    const r = await plugin.apply([...hosts, ...kept], cap);
    const applyMs = performance.now() - t;
    let waits = await by.stop();
    const longest = Math.max(...runs.map((x) => x.ms));
    rows.push(`${size}: ${gone.length} of ${nets.length} networks withdrawn (removed ${r.removed}, added ${r.added}, updated ${r.updated}): apply ${(applyMs / 1000).toFixed(1)} s in ${runs.length} runs, longest ${(longest / 1000).toFixed(2)} s; bystander's nft waited median ${median(waits).toFixed(0)} ms, at most ${(Math.max(...waits) / 1000).toFixed(2)} s (${waits.length} commands)`);
    console.log(rows.at(-1));
    // The same deletions as one transaction, after putting them back.
    await plugin.apply([...hosts, ...nets], cap);
    const script = `delete element inet wcf_agent wcf-blocklist-nets {\n${gone.map((e) => `\t${e.cidr.text} . ipv4`).join(',\n')}\n}\n`;
    by = bystander(ns);
    t = performance.now();
    await ns.exec('nft', ['-f', '-'], script);
    const oneMs = performance.now() - t;
    waits = await by.stop();
    rows.push(`${size}: the same ${gone.length} deletions as one transaction: ${(oneMs / 1000).toFixed(1)} s; bystander's nft waited median ${median(waits).toFixed(0)} ms, at most ${(Math.max(...waits) / 1000).toFixed(2)} s (${waits.length} commands)`);
    console.log(rows.at(-1));
    await plugin.flush();
  }
  console.log(`\n${rows.join('\n')}`);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(cleanupNow);
