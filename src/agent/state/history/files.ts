import { closeSync, constants, fdatasyncSync, fstatSync, fsyncSync, lstatSync, openSync, readdirSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readStateFile, UnsafeStateFile } from '../../../util/untrusted-file.js';
import { HEADER, readBlocks, type Block } from './block.js';

/**
 * The history's files in state_dir: `history-00000001.bin`, `history-00000002.bin`, ...,
 * each a run of blocks (block.ts), appended to the newest. A file is closed once it holds an
 * eighth of `history_max_mb`, and the oldest files are deleted whenever the next block
 * would take the total past `history_max_mb`: the oldest changes go first, a file at a time.
 */

const NAME = /^history-(\d{8})\.bin$/;
/** Files are never smaller than this (a tiny history_max_mb would otherwise make a file per block). */
const MIN_FILE_BYTES = 64 * 1024;
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

export interface HistoryFile {
  readonly seq: number;
  readonly path: string;
  readonly size: number;
}

/**
 * The history files of `dir`, oldest first (only regular files: a link or a FIFO under that name
 * is not one); none when `dir` does not exist. Throws when it cannot be listed (no permission):
 * an empty history must not be claimed for one that cannot be read.
 */
export function historyFiles(dir: string): HistoryFile[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: HistoryFile[] = [];
  for (const name of names) {
    const m = NAME.exec(name);
    if (!m) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (st.isFile()) out.push({ seq: Number(m[1]), path, size: st.size });
    } catch {
      /* gone meanwhile */
    }
  }
  return out.sort((a, b) => a.seq - b.seq);
}

export const historyFileName = (seq: number) => `history-${String(seq).padStart(8, '0')}.bin`;

/** How big one file may grow before the next block starts a new one. */
export function fileBytesFor(maxBytes: number): number {
  return Math.max(MIN_FILE_BYTES, Math.floor(maxBytes / 8));
}

/** Files whose blocks are known sound, with the size they had then (shared by every writer of the process). */
const SOUND = new Map<string, number>();

/**
 * Appends blocks within the size bound. The first append of a process reads the newest file
 * through once: after a crash its last block may be torn, and a block appended behind a torn
 * one could never be read; such a file is left as it is (its sound blocks stay readable) and
 * the block goes to a new file.
 */
export class HistoryWriter {
  private readonly sound = SOUND;

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
  ) {}

  /** The largest block that fits the bound (the caller leaves changes out of one that does not). */
  get limit(): number {
    return this.maxBytes;
  }

  append(block: Buffer): void {
    if (block.length > this.maxBytes) throw new RangeError(`a history block of ${block.length} bytes is larger than history_max_mb`);
    const files = historyFiles(this.dir);
    const last = files.at(-1);
    const next = (after: HistoryFile | undefined): HistoryFile => ({ seq: (after?.seq ?? 0) + 1, path: join(this.dir, historyFileName((after?.seq ?? 0) + 1)), size: 0 });
    const reuse = last !== undefined && last.size < fileBytesFor(this.maxBytes) && this.isSound(last);
    let target = reuse ? last : next(last);
    // Oldest first, until the new block fits; the file appended to only when nothing else is left.
    let total = files.reduce((s, f) => s + f.size, 0) + block.length;
    for (const f of files) {
      if (total <= this.maxBytes) break;
      if (f === target) continue;
      this.remove(f);
      total -= f.size;
    }
    if (total > this.maxBytes && reuse) {
      this.remove(target);
      target = next(target);
    }
    this.write(target.path, block, target.size === 0);
  }

  private remove(f: HistoryFile): void {
    unlinkSync(f.path);
    this.sound.delete(f.path);
  }

  private isSound(f: HistoryFile): boolean {
    if (this.sound.get(f.path) === f.size) return true;
    let buf: Buffer | undefined;
    try {
      buf = readStateFile(f.path);
    } catch (err) {
      if (err instanceof UnsafeStateFile) return false;
      throw err;
    }
    const ok = buf !== undefined && readBlocks(buf).valid === buf.length;
    if (ok) this.sound.set(f.path, buf!.length);
    return ok;
  }

  private write(path: string, block: Buffer, created: boolean): void {
    const fd = openSync(path, APPEND_FLAGS, 0o600);
    try {
      let off = 0;
      while (off < block.length) off += writeSync(fd, block, off, block.length - off);
      fdatasyncSync(fd);
      this.sound.set(path, fstatSync(fd).size);
    } finally {
      closeSync(fd);
    }
    if (created) syncDir(this.dir);
  }
}

/** A new file's name made durable with it. */
function syncDir(dir: string): void {
  try {
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* the block itself is on disk; a lost name after a power cut costs that block only */
  }
}

/**
 * The sound blocks of each history file, one file's bytes at a time (read as any state file
 * is: no link followed, regular files only), oldest file first, or newest first with `newest`;
 * `visit` answers true to stop. Answers the files that could not be read, named with why.
 */
export function eachHistoryFile(dir: string, visit: (blocks: Block[], bytes: number) => boolean | void, o: { newest?: boolean } = {}): string[] {
  const unreadable: string[] = [];
  let files: HistoryFile[];
  try {
    files = historyFiles(dir);
  } catch (err) {
    return [`${dir}: cannot list (${(err as NodeJS.ErrnoException).code ?? 'error'})`];
  }
  for (const f of o.newest ? files.reverse() : files) {
    let buf: Buffer | undefined;
    try {
      buf = readStateFile(f.path);
    } catch (err) {
      unreadable.push(err instanceof UnsafeStateFile ? `${f.path}: ${err.reason}` : f.path);
      continue;
    }
    if (buf && visit(readBlocks(buf).blocks, buf.length) === true) break;
  }
  return unreadable;
}

/** The history's size on disk and the time of its oldest block (epoch s; undefined when it is empty), without reading it through. */
export function historyStats(dir: string): { bytes: number; files: number; oldest: number | undefined } {
  let files: HistoryFile[];
  try {
    files = historyFiles(dir);
  } catch {
    return { bytes: 0, files: 0, oldest: undefined };
  }
  const bytes = files.reduce((s, f) => s + f.size, 0);
  let oldest: number | undefined;
  for (const f of files) {
    oldest = firstBlockTs(f.path);
    if (oldest !== undefined) break;
  }
  return { bytes, files: files.length, oldest };
}

function firstBlockTs(path: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const head = Buffer.alloc(HEADER);
    if (readSync(fd, head, 0, HEADER, 0) < HEADER || head.readUInt32LE(0) !== 0x48464357) return undefined;
    return head.readUInt32LE(8);
  } finally {
    closeSync(fd);
  }
}
