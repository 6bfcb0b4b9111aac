import { releaseArray } from '../../util/release.js';
import { EntryColumns } from '../entry-columns.js';
import type { CommandRunner } from '../../exec/runner.js';
import { withEventsPaused } from '../monitor.js';
import { splitNetsDelta } from './reshape.js';
import { chainsScript, tableSetsScript } from './table/build.js';
import { nftDeltaScript, nftRefillScript, type NftLayout, type NftParts } from './text.js';

/**
 * Most elements one `nft -f` run carries. nft holds what it parses several
 * times over: a million elements in one run peaked at 390 MB in nft (the host
 * pays it on top of the agent); a hundred thousand at 40 MB, and a million sent
 * as ten runs takes about as long as one.
 */
export const NFT_CHUNK = 100_000;

/** Entries [from, to) of `c` as columns sharing its memory (no copy). */
export function sliceColumns(c: EntryColumns, from: number, to: number): EntryColumns {
  const out = new EntryColumns(1);
  out.starts = c.starts.subarray(from, to);
  out.prefixes = c.prefixes.subarray(from, to);
  out.timeouts = c.timeouts.subarray(from, to);
  out.length = Math.max(0, to - from);
  return out;
}

const EMPTY = new EntryColumns(1);

/**
 * What deleting one network may cost the kernel (ms), the set holding `held`: estimated high,
 * for time limits and for how many deletions one run carries. The networks' set is a
 * concatenated interval set, which the kernel keeps as a "pipapo" match: it finds an element
 * to remove by walking its rules from the first, so one deletion costs up to the whole set.
 * Measured on kernel 6.18, deleting the last 500 or 1,000 added: 3.8 ms each at 2,000
 * networks, 24 ms at 10,000, 12.6 ms at 30,000, 56 ms at 150,000 (below ~16,000 rules the
 * kernel uses wider lookup tables, six times slower to walk per rule); 1,000 of the first
 * added at 150,000: 0.4 ms each; 1,000 at random: 31 ms. Taken at 2.5 times that.
 */
export function netDeleteMs(held: number): number {
  return 2.5 * Math.max(held * 0.4e-3, Math.min(held, 16_384) * 2.5e-3);
}

/**
 * What a refill (`flush set` + every wanted network, one transaction) costs the kernel per
 * network held or written (ms): 150,000 networks flushed alone took 38 s, flushed and
 * written again 117 s (0.4 ms per element of either side). Taken at 2.5 times that. Smaller
 * sets cost less per element (10,000: 2.1 s, 30,000: 7.9 s): the estimate is high there, which
 * only keeps the agent to deletions in short runs longer.
 */
const NET_REFILL_MS_PER_ELEMENT = 0.4 * 2.5;

/** What refilling the networks' set may cost the kernel (ms), from `held` networks to `wanted` (see NET_REFILL_MS_PER_ELEMENT). */
export function netRefillMs(held: number, wanted: number): number {
  return (held + wanted) * NET_REFILL_MS_PER_ELEMENT;
}

/**
 * The most kernel time one run of deletions of networks may be estimated at (ms): the kernel
 * holds its ruleset lock for a whole transaction, so every other nft command on the host (a
 * container runtime's, kube-proxy's, an operator's) waits while it runs. Deletions that need
 * not be atomic together go in runs of at most this much; a network reshaped (deleted and
 * replaced by overlapping ones) is never split, whatever it costs.
 */
export const NET_DELETE_RUN_MS = 2_000;

/** One set's changes. */
export interface SetChange {
  readonly set: string;
  readonly add: EntryColumns;
  readonly del: EntryColumns;
  /** Rewrite the set whole (`flush set` + its wanted elements) instead: `wanted` is then what it holds. */
  readonly refill?: EntryColumns;
}

/** How many elements the changes write (a refill writes its whole set). */
export function written(changes: readonly SetChange[]): number {
  return changes.reduce((n, c) => n + (c.refill ? c.refill.length : c.add.length) + c.del.length, 0);
}

/**
 * The change of the networks' set, from `held` networks to `wanted`: a delta, unless the set
 * holds what a delta cannot remove (`mustRefill`: ranges someone else put in) or the delta's
 * deletions would cost the kernel over three times what a refill does (see the two costs above:
 * at 150,000 networks, from 6,000 deletions on).
 */
export function netsChange(set: string, add: EntryColumns, del: EntryColumns, wanted: EntryColumns, held: number, mustRefill = false): SetChange {
  const deltaMs = del.length * netDeleteMs(held);
  return mustRefill || deltaMs > 3 * netRefillMs(held, wanted.length) ? { set, add, del, refill: wanted } : { set, add, del };
}

/**
 * What one element of the networks' set costs nft to parse, against one of the set of
 * addresses: 100,000 networks of its concatenated key held nft at 119 MB, as many addresses
 * at 43 MB. A run is sized by this weight, so no run costs nft more than ~45 MB.
 */
export const NETS_WEIGHT = 3;

/** One `nft -f -` run: its script, and what it may cost (for its time limit). */
export interface NftRun {
  readonly script: Buffer;
  /** Elements it writes. */
  readonly elements: number;
  /** Kernel time beyond writing them, estimated high: deletions and refills of the networks' set. */
  readonly slowMs: number;
}

/** Collects scripts into runs within NFT_CHUNK (weighted) and NET_DELETE_RUN_MS. */
class Runs {
  private parts: Buffer[] = [];
  private weight = 0;
  private elements = 0;
  private slowMs = 0;

  /** The run so far, if adding one of `weight` and `slowMs` would pass a bound: take it first. */
  private *fit(weight: number, slowMs = 0): Generator<NftRun> {
    if (this.parts.length > 0 && (this.weight + weight > NFT_CHUNK || (slowMs > 0 && this.slowMs + slowMs > NET_DELETE_RUN_MS))) yield* this.flush();
  }

  *put(weight: number, elements: number, script: Buffer, slowMs = 0): Generator<NftRun> {
    yield* this.fit(weight, slowMs);
    this.parts.push(script);
    this.weight += weight;
    this.elements += elements;
    this.slowMs += slowMs;
  }

  *flush(): Generator<NftRun> {
    if (this.parts.length > 0) yield { script: Buffer.concat(this.parts.splice(0)), elements: this.elements, slowMs: this.slowMs };
    this.weight = 0;
    this.elements = 0;
    this.slowMs = 0;
  }
}

/** How many of `c` from `from` fit in one run, at `weight` and `slowMs` each (at least one). */
function runLength(c: EntryColumns, from: number, weight: number, slowMs = 0): number {
  const byWeight = Math.floor(NFT_CHUNK / weight);
  const bySlow = slowMs > 0 ? Math.floor(NET_DELETE_RUN_MS / slowMs) : Infinity;
  return Math.max(1, Math.min(c.length - from, byWeight, bySlow));
}

/**
 * The runs that create the table whole (see build.ts): the table with its sets and what fits of
 * its networks, then of its addresses; the rest of the elements in further runs; its chains and
 * rules last, in a run of their own, so they are hooked only once every element is in.
 */
export function* creation(l: NftLayout, parts: NftParts): Generator<NftRun> {
  const firstNets = Math.min(parts.nets.length, Math.floor(NFT_CHUNK / NETS_WEIGHT));
  const firstHosts = Math.max(0, Math.min(parts.hosts.length, NFT_CHUNK - firstNets * NETS_WEIGHT));
  const first = { nets: sliceColumns(parts.nets, 0, firstNets), hosts: sliceColumns(parts.hosts, 0, firstHosts) };
  yield { script: tableSetsScript(l, first), elements: firstHosts + firstNets, slowMs: 0 };
  for (const [set, c, from] of [[l.nets, parts.nets, firstNets], [l.set, parts.hosts, firstHosts]] as const) yield* fill(l, set, c, from);
  yield { script: chainsScript(l), elements: 0, slowMs: 0 };
}

/** Runs that add the elements of `c` from `from` on to `set` (which they create if it is missing). */
export function* fill(l: NftLayout, set: string, c: EntryColumns, from = 0): Generator<NftRun> {
  const weight = set === l.nets ? NETS_WEIGHT : 1;
  for (let i = from; i < c.length; ) {
    const end = i + runLength(c, i, weight);
    yield { script: nftDeltaScript(l, sliceColumns(c, i, end), EMPTY, set), elements: end - i, slowMs: 0 };
    i = end;
  }
}

/**
 * The transactions of one apply, each at most NFT_CHUNK elements (networks weighted by
 * NETS_WEIGHT), in an order that never unblocks a wanted address: additions (and refills)
 * first, then each group of networks reshaped (its deletions and the overlapping additions in
 * one transaction), then the other deletions; so while they run the set holds the old entries
 * and the new ones, each wanted at one of the two moments. Deletions of networks go in runs of
 * at most NET_DELETE_RUN_MS of estimated kernel time (`netsHeld`: how many the set holds). A
 * change that fits one run is one transaction (atomic).
 */
export function* transactions(l: NftLayout, changes: readonly SetChange[], netsHeld = 0): Generator<NftRun> {
  const runs = new Runs();
  const weight = (set: string) => (set === l.nets ? NETS_WEIGHT : 1);
  const deleteMs = (set: string) => (set === l.nets ? netDeleteMs(netsHeld) : 0);
  const split = changes.map((c) => (c.refill || c.set !== l.nets ? { add: c.add, del: c.del, groups: [] } : splitNetsDelta(c.add, c.del)));
  // Additions and refills.
  for (const [k, c] of changes.entries()) {
    const w = weight(c.set);
    if (c.refill) {
      const refillMs = c.set === l.nets ? netRefillMs(netsHeld, c.refill.length) : 0;
      yield* runs.put(c.refill.length * w, c.refill.length, nftRefillScript(l, c.refill, c.set), refillMs);
      continue;
    }
    const add = split[k]!.add;
    for (let i = 0; i < add.length; ) {
      const end = i + runLength(add, i, w);
      yield* runs.put((end - i) * w, end - i, nftDeltaScript(l, sliceColumns(add, i, end), EMPTY, c.set));
      i = end;
    }
  }
  // Networks reshaped: each group whole, its deletions first (see splitNetsDelta).
  for (const [k, c] of changes.entries()) {
    for (const g of split[k]!.groups) {
      const elements = g.add.length + g.del.length;
      yield* runs.put((g.add.length + 2 * g.del.length) * weight(c.set), elements, nftDeltaScript(l, g.add, g.del, c.set), g.del.length * deleteMs(c.set));
    }
  }
  // Deletions (each rendered with its guard: two elements written per deletion).
  for (const [k, c] of changes.entries()) {
    if (c.refill) continue;
    const del = split[k]!.del;
    const w = 2 * weight(c.set);
    const each = deleteMs(c.set);
    for (let i = 0; i < del.length; ) {
      const end = i + runLength(del, i, w, each);
      yield* runs.put((end - i) * w, end - i, nftDeltaScript(l, EMPTY, sliceColumns(del, i, end), c.set), (end - i) * each);
      i = end;
    }
  }
  yield* runs.flush();
}

/** Elements from which a write runs with the agent's event sources paused (see withEventsPaused): below, the announcements cost next to nothing. */
export const PAUSE_EVENTS_AT = 10_000;

/**
 * Run the transactions one after the other (`nft -f -` each); the script's memory is released
 * after each. `elements`: how many the transactions write, for the pause of the event sources;
 * `timeoutMs`: each run's limit, from what it may cost (none: the runner's own).
 */
export async function runTransactions(runner: CommandRunner, runs: Iterable<NftRun>, elements = 0, timeoutMs?: (run: NftRun) => number): Promise<number> {
  const go = async () => {
    let n = 0;
    for (const run of runs) {
      const limit = timeoutMs?.(run);
      await runner.run('nft', ['-f', '-'], { input: run.script, ...(limit === undefined ? {} : { timeoutMs: limit }) });
      releaseArray(run.script);
      n++;
    }
    return n;
  };
  return elements >= PAUSE_EVENTS_AT ? withEventsPaused(go) : go();
}
