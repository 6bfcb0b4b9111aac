import { releaseArray } from '../../util/release.js';
import { EntryColumns } from '../entry-columns.js';
import type { CommandRunner } from '../../exec/runner.js';
import { withEventsPaused } from '../monitor.js';
import { deltaReshapesIntervals } from './overlaps.js';
import { nftDeltaScript, nftRecreateScript, nftRefillScript, type NftLayout, type NftParts } from './text.js';

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

/** Whether a change of the interval set must be a refill (see deltaReshapesIntervals). */
export function netsNeedRefill(add: EntryColumns, del: EntryColumns): boolean {
  return deltaReshapesIntervals(add, del);
}

/**
 * What one element of the networks' set costs nft to parse, against one of the set of
 * addresses: 100,000 networks of its concatenated key held nft at 119 MB, as many addresses
 * at 43 MB. A run is sized by this weight, so no run costs nft more than ~45 MB.
 */
export const NETS_WEIGHT = 3;

/**
 * The transactions of one apply, each at most NFT_CHUNK elements (networks weighted by
 * NETS_WEIGHT), in an order that never unblocks a wanted address: every addition (and refill)
 * before any deletion, so while they run the set holds the old entries and the new ones, each
 * wanted at one of the two moments. A change that fits one chunk is one transaction (atomic, as
 * before). The table itself, when it is (re-)created, comes first with what fits of its
 * networks, then of its addresses; the rest follows in further runs.
 */
export function* transactions(l: NftLayout, changes: readonly SetChange[], recreate?: NftParts): Generator<Buffer> {
  let room = NFT_CHUNK;
  const parts: Buffer[] = [];
  const flush = function* (): Generator<Buffer> {
    if (parts.length > 0) yield Buffer.concat(parts.splice(0));
    room = NFT_CHUNK;
  };
  const weight = (set: string) => (set === l.nets ? NETS_WEIGHT : 1);
  if (recreate) {
    const firstNets = Math.min(recreate.nets.length, Math.floor(NFT_CHUNK / NETS_WEIGHT));
    const firstHosts = Math.max(0, Math.min(recreate.hosts.length, NFT_CHUNK - firstNets * NETS_WEIGHT));
    parts.push(nftRecreateScript(l, { nets: sliceColumns(recreate.nets, 0, firstNets), hosts: sliceColumns(recreate.hosts, 0, firstHosts) }));
    room -= firstHosts + firstNets * NETS_WEIGHT;
    for (const [set, c, from] of [[l.nets, recreate.nets, firstNets], [l.set, recreate.hosts, firstHosts]] as const) {
      const per = Math.floor(NFT_CHUNK / weight(set));
      for (let i = from; i < c.length; i += per) {
        yield* flush();
        const end = Math.min(c.length, i + per);
        parts.push(nftDeltaScript(l, sliceColumns(c, i, end), EMPTY, set));
        room -= (end - i) * weight(set);
      }
    }
  }
  const put = function* (size: number, script: () => Buffer): Generator<Buffer> {
    if (size > room && parts.length > 0) yield* flush();
    parts.push(script());
    room -= size;
  };
  for (const c of changes) {
    const w = weight(c.set);
    if (c.refill) {
      const refill = c.refill;
      yield* put(refill.length * w, () => nftRefillScript(l, refill, c.set));
      continue;
    }
    const per = Math.floor(NFT_CHUNK / w);
    for (let i = 0; i < c.add.length; i += per) {
      const end = Math.min(c.add.length, i + per);
      yield* put((end - i) * w, () => nftDeltaScript(l, sliceColumns(c.add, i, end), EMPTY, c.set));
    }
  }
  for (const c of changes) {
    if (c.refill) continue;
    const w = weight(c.set);
    const per = Math.floor(NFT_CHUNK / w);
    for (let i = 0; i < c.del.length; i += per) {
      const end = Math.min(c.del.length, i + per);
      yield* put(2 * (end - i) * w, () => nftDeltaScript(l, EMPTY, sliceColumns(c.del, i, end), c.set));
    }
  }
  yield* flush();
}

/** Elements from which a write runs with the agent's event sources paused (see withEventsPaused): below, the announcements cost next to nothing. */
export const PAUSE_EVENTS_AT = 10_000;

/**
 * Run the transactions one after the other (`nft -f -` each); the script's memory is released
 * after each. `elements`: how many the transactions write, for the pause of the event sources;
 * `timeoutMs`: each run's limit for that many elements (none: the runner's own).
 */
export async function runTransactions(runner: CommandRunner, scripts: Iterable<Buffer>, elements = 0, timeoutMs?: (elements: number) => number): Promise<number> {
  const limit = timeoutMs?.(Math.min(elements, NFT_CHUNK));
  const run = async () => {
    let n = 0;
    for (const script of scripts) {
      await runner.run('nft', ['-f', '-'], { input: script, ...(limit === undefined ? {} : { timeoutMs: limit }) });
      releaseArray(script);
      n++;
    }
    return n;
  };
  return elements >= PAUSE_EVENTS_AT ? withEventsPaused(run) : run();
}
