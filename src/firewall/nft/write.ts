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
 * The transactions of one apply, each at most NFT_CHUNK elements, in an order
 * that never unblocks a wanted address: every addition (and refill) before any
 * deletion, so while they run the set holds the old entries and the new ones,
 * each wanted at one of the two moments. A change that fits one chunk is one
 * transaction (atomic, as before). The table itself, when it is (re-)created,
 * comes first with what fits of its elements.
 */
export function* transactions(l: NftLayout, changes: readonly SetChange[], recreate?: NftParts): Generator<Buffer> {
  let room = NFT_CHUNK;
  const parts: Buffer[] = [];
  const flush = function* (): Generator<Buffer> {
    if (parts.length > 0) yield Buffer.concat(parts.splice(0));
    room = NFT_CHUNK;
  };
  if (recreate) {
    // The networks whole (an interval set cannot take a later add without nft reading it back), the addresses that fit.
    const first = Math.max(0, Math.min(recreate.hosts.length, NFT_CHUNK - recreate.nets.length));
    parts.push(nftRecreateScript(l, { nets: recreate.nets, hosts: sliceColumns(recreate.hosts, 0, first) }));
    room -= first + recreate.nets.length;
    for (let i = first; i < recreate.hosts.length; i += NFT_CHUNK) {
      yield* flush();
      const end = Math.min(recreate.hosts.length, i + NFT_CHUNK);
      parts.push(nftDeltaScript(l, sliceColumns(recreate.hosts, i, end), EMPTY, l.set));
      room -= end - i;
    }
  }
  const put = function* (size: number, script: () => Buffer): Generator<Buffer> {
    if (size > room && parts.length > 0) yield* flush();
    parts.push(script());
    room -= size;
  };
  for (const c of changes) {
    if (c.refill) {
      const refill = c.refill;
      yield* put(refill.length, () => nftRefillScript(l, refill, c.set));
      continue;
    }
    for (let i = 0; i < c.add.length; i += NFT_CHUNK) {
      const end = Math.min(c.add.length, i + NFT_CHUNK);
      yield* put(end - i, () => nftDeltaScript(l, sliceColumns(c.add, i, end), EMPTY, c.set));
    }
  }
  for (const c of changes) {
    if (c.refill) continue;
    for (let i = 0; i < c.del.length; i += NFT_CHUNK) {
      const end = Math.min(c.del.length, i + NFT_CHUNK);
      yield* put(2 * (end - i), () => nftDeltaScript(l, EMPTY, sliceColumns(c.del, i, end), c.set));
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
