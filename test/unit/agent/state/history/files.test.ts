import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeBlock, readBlocks, unpack } from '../../../../../src/agent/state/history/block.js';
import { EventColumns, NO_CAUSE, NO_SCORE, PERMANENT } from '../../../../../src/agent/state/history/events.js';
import { historyFiles, historyStats, HistoryWriter } from '../../../../../src/agent/state/history/files.js';
import { findInHistory } from '../../../../../src/agent/state/history/read.js';
import { callAsNobody } from '../../../../helpers/unprivileged.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'wcf-history-'));
  dirs.push(d);
  return d;
}

/** A batch of `n` additions of consecutive /32s from `base`, at `ts`. */
function batch(n: number, ts: number, base = 0x0a000000): EventColumns {
  const e = new EventColumns('addresses');
  for (let i = 0; i < n; i++) e.push({ start: base + i, prefix: 32 }, { ts, change: 'added', reason: 'score', score: 5 + i / 100, rank: i + 1, expires: ts + 3600 });
  return e;
}
const block = (n: number, ts: number, base?: number) => encodeBlock({ kind: 'addresses', cause: 'cycle', ts, plugin: 'nftables' }, batch(n, ts, base));
const ALL = { kind: 'addresses', start: 0, end: 0xffffffff } as const;

describe('history blocks', () => {
  it('read back exactly what was written: targets, change, reason, score, rank, expiry, previous state', () => {
    const e = new EventColumns('addresses');
    e.push({ start: 0xcb007109, prefix: 32 }, { ts: 1000, change: 'added', reason: 'score', score: 9.5, rank: 3, expires: 5000 });
    e.push({ start: 0xc6336400, prefix: 24 }, { ts: 1000, change: 'removed', reason: 'whitelisted', prev: 'manual', prevExpires: null });
    e.push({ start: 0x0a000001, prefix: 32 }, { ts: 900, change: 'removed', reason: 'expired', prev: 'score', prevExpires: 900 });
    e.push({ start: 0x0a000002, prefix: 32 }, { ts: 1000, change: 'updated', reason: 'manual', expires: null, prev: 'score', prevExpires: 1200 });
    const b = encodeBlock({ kind: 'addresses', cause: 'poll', ts: 1000, plugin: 'ipset' }, e);
    const { blocks, valid } = readBlocks(b);
    expect(valid).toBe(b.length);
    expect(blocks).toHaveLength(1);
    const r = blocks[0]!;
    expect(r).toMatchObject({ kind: 'addresses', cause: 'poll', ts: 1000, count: 4, plugin: 'ipset' });
    expect([...r.starts!]).toEqual([0xcb007109, 0xc6336400, 0x0a000001, 0x0a000002]);
    expect([...r.prefixes!]).toEqual([32, 24, 32, 32]);
    const u = unpack(r)!;
    expect([...u.ts]).toEqual([1000, 1000, 900, 1000]);
    // Hundredths of the score; none for the removal.
    expect([...u.scores]).toEqual([950, NO_SCORE, NO_SCORE, NO_SCORE]);
    expect([...u.causes]).toEqual([NO_CAUSE, NO_CAUSE, NO_CAUSE, NO_CAUSE]);
    expect([...u.ranks]).toEqual([3, 0, 0, 0]);
    expect([...u.expires]).toEqual([5000, 0, 0, PERMANENT]);
    expect([...u.prevExpires]).toEqual([0, PERMANENT, 900, 1200]);
  });

  it('are a few bytes per change: a cycle changing 10,000 entries is not megabytes', () => {
    const b = block(10_000, 1_790_000_000);
    // Raw targets (5 bytes) plus the packed columns.
    expect(b.length / 10_000).toBeLessThan(12);
  });

  it('a block whose bytes were changed is not read, nor anything after it', () => {
    const a = block(10, 1000);
    const b = block(10, 2000, 0x0b000000);
    const c = block(10, 3000, 0x0c000000);
    const buf = Buffer.concat([a, b, c]);
    buf[a.length + 50] = buf[a.length + 50]! ^ 0xff; // inside b: its CRC no longer matches
    const r = readBlocks(buf);
    expect(r.blocks.map((x) => x.ts)).toEqual([1000]);
    expect(r.valid).toBe(a.length);
  });
});

describe('history files', () => {
  it('a torn tail (a crash mid-append) is ignored: the blocks before it read, the next block goes to a new file, nothing fails', () => {
    const dir = tmp();
    const w = new HistoryWriter(dir, 1 << 20);
    w.append(block(100, 1000));
    w.append(block(100, 2000, 0x0b000000));
    const [f] = historyFiles(dir);
    truncateSync(f!.path, statSync(f!.path).size - 7);
    // A new process: it reads the newest file through before appending to it.
    new HistoryWriter(dir, 1 << 20).append(block(100, 3000, 0x0c000000));
    expect(historyFiles(dir)).toHaveLength(2);
    const found = findInHistory(dir, ALL);
    expect([...new Set(found.events.map((e) => e.ts))]).toEqual([1000, 3000]);
    expect(found.events).toHaveLength(200);
  });

  it('garbage after the last block, an empty file, and a link under a history name: no failure, no link followed', () => {
    const dir = tmp();
    new HistoryWriter(dir, 1 << 20).append(block(5, 1000));
    const [f] = historyFiles(dir);
    appendFileSync(f!.path, Buffer.from('not a block at all, some garbage'));
    writeFileSync(join(dir, 'history-00000005.bin'), '');
    const secret = join(dir, 'secret');
    writeFileSync(secret, block(5, 50, 0x01000000));
    symlinkSync(secret, join(dir, 'history-00000009.bin'));
    const found = findInHistory(dir, ALL);
    expect(found.events.map((e) => e.ts)).toEqual([1000, 1000, 1000, 1000, 1000]);
    // The link is not a history file: neither read nor appended to.
    new HistoryWriter(dir, 1 << 20).append(block(5, 2000, 0x0b000000));
    expect(readFileSync(secret)).toEqual(block(5, 50, 0x01000000));
    expect(findInHistory(dir, ALL).events.filter((e) => e.ts === 2000)).toHaveLength(5);
  });

  it('stays within the bound: the oldest files go first, the newest changes stay', () => {
    const dir = tmp();
    const max = 256 * 1024;
    const w = new HistoryWriter(dir, max);
    const oldest: number[] = [];
    for (let k = 0; k < 400; k++) {
      w.append(block(200, 1000 + k, 0x0a000000 + k * 1000));
      const stats = historyStats(dir);
      expect(stats.bytes).toBeLessThanOrEqual(max);
      oldest.push(stats.oldest!);
    }
    // Oldest first: the first kept batch only moves forward, and the last one written is there.
    expect(oldest.every((t, i) => i === 0 || t >= oldest[i - 1]!)).toBe(true);
    expect(oldest.at(-1)!).toBeGreaterThan(1000);
    const found = findInHistory(dir, ALL);
    expect(found.oldest).toBe(oldest.at(-1));
    expect(found.events.at(-1)!.ts).toBe(1399);
  });

  it('a state dir the reader may not list is said to be unreadable, not an empty history', async () => {
    const dir = tmp(); // 0700, root's
    new HistoryWriter(dir, 1 << 20).append(block(5, 1000));
    const found = await callAsNobody<{ events: unknown[]; oldest?: number; unreadable: string[] }>('src/agent/state/history/read.ts', 'findInHistory', [dir, ALL]);
    expect(found.events).toEqual([]);
    expect(found.unreadable).toEqual([`${dir}: cannot list (EACCES)`]);
  });

  it('a block larger than the whole bound is refused (the history then keeps a part of it)', () => {
    const dir = tmp();
    expect(() => new HistoryWriter(dir, 64 * 1024).append(block(50_000, 1000))).toThrow(/larger than history_max_mb/);
  });
});
