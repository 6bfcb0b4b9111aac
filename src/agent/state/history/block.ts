import { crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import { CAUSE_CODE, KINDS, type Cause, type Kind } from './codes.js';
import { causeOf, NO_EXPIRY, PERMANENT, type EventColumns } from './events.js';

/**
 * One batch of changes as the history files hold it: a block, appended whole and checked
 * by a CRC, so a block torn by a crash or a full disk is found and ignored with everything
 * after it in its file.
 *
 *   0  u32 magic "WCFH"        4  u8 version, kind, cause, flags
 *   8  u32 ts (the batch)      12 u32 count (changes)
 *   16 u32 raw bytes           20 u32 packed bytes     24 u32 block bytes
 *   28 u8 note reason, 3 spare 32 plugin name (8 bytes, latin1, NUL-padded)
 *   40 raw: the targets, read by every search without unpacking:
 *        addresses: network u32[count], prefix u8[count]; names: the names joined by "\n"
 *      packed (deflate): ts, score (hundredths), rank, expires, previous expiry, each u32[count]
 *        split into its four byte planes; then change|reason, previous reason, cause, u8[count];
 *        a note's text instead
 *   ... u32 CRC-32 of everything before it
 *
 * Little-endian, each section padded to 4 bytes. The packed columns are mostly runs (one ts,
 * the same reason, no rank); times are kept as offsets from the block's ts and each number
 * split into byte planes, so their high bytes are runs too and deflate leaves a few bytes
 * per change. The target columns stay raw so that a search scans them at memory speed and
 * unpacks only the blocks that match.
 */

const MAGIC = 0x48464357; // "WCFH"
const VERSION = 1;
export const HEADER = 40;
const TRAILER = 4;
/** Bytes per change in the packed columns before deflate. */
const PACKED_ROW = 23;
/** A time stored as an offset from the block's ts: 2^31 is the block's own second. */
const OFFSET = 2 ** 31;
/** More changes than any apply can make (twice the largest maximum_rules, removals and additions). */
const MAX_COUNT = 1 << 23;

export const FLAG_PARTIAL = 1;
/** The changes of a flush whose applied record was kept (the daemon's on_stop flush): the restore adds them back. */
export const FLAG_RECORD_KEPT = 2;

const pad4 = (n: number) => (n + 3) & ~3;

export interface BlockMeta {
  readonly kind: Kind;
  readonly cause: Cause;
  readonly ts: number;
  /** The backend that made the change (`nftables`, `unbound`, ...). */
  readonly plugin: string;
  readonly flags?: number;
  /** A note's reason code and text (kind `note`). */
  readonly noteReason?: number;
  readonly note?: string;
}

/** The block for `events` (or a note), ready to append. */
export function encodeBlock(meta: BlockMeta, events?: EventColumns): Buffer {
  const n = events?.length ?? 0;
  let raw: Buffer;
  let packed: Buffer;
  if (meta.kind === 'note' || !events) {
    raw = Buffer.alloc(0);
    packed = deflateRawSync(Buffer.from(meta.note ?? '', 'utf8'));
  } else {
    raw = events.kind === 'addresses' ? addressTargets(events) : Buffer.from(events.names.join('\n'), 'latin1');
    packed = deflateRawSync(packColumns(events, Math.floor(meta.ts)), { level: 9 });
  }
  const rawLen = pad4(raw.length);
  const total = HEADER + rawLen + pad4(packed.length) + TRAILER;
  const out = Buffer.alloc(total);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt8(VERSION, 4);
  out.writeUInt8(KINDS.indexOf(meta.kind), 5);
  out.writeUInt8(CAUSE_CODE[meta.cause], 6);
  out.writeUInt8(meta.flags ?? 0, 7);
  out.writeUInt32LE(Math.max(0, Math.floor(meta.ts)) >>> 0, 8);
  out.writeUInt32LE(n, 12);
  out.writeUInt32LE(raw.length, 16);
  out.writeUInt32LE(packed.length, 20);
  out.writeUInt32LE(total, 24);
  out.writeUInt8(meta.noteReason ?? 0, 28);
  out.write(meta.plugin.slice(0, 8), 32, 8, 'latin1');
  raw.copy(out, HEADER);
  packed.copy(out, HEADER + rawLen);
  out.writeUInt32LE(crc32(out.subarray(0, total - TRAILER)), total - TRAILER);
  return out;
}

function addressTargets(e: EventColumns): Buffer {
  const n = e.length;
  const out = Buffer.alloc(5 * n);
  Buffer.from(e.starts.buffer, e.starts.byteOffset, 4 * n).copy(out, 0);
  Buffer.from(e.prefixes.buffer, e.prefixes.byteOffset, n).copy(out, 4 * n);
  return out;
}

/** A time as an offset from the block's ts (the special values 0 and PERMANENT kept as they are). */
const toOffset = (t: number, ts: number) => (t === NO_EXPIRY || t === PERMANENT ? t : (Math.min(OFFSET - 2, Math.max(1 - OFFSET, t - ts)) + OFFSET) >>> 0);
const fromOffset = (v: number, ts: number) => (v === NO_EXPIRY || v === PERMANENT ? v : v - OFFSET + ts);

function packColumns(e: EventColumns, ts: number): Buffer {
  const n = e.length;
  const out = Buffer.alloc(PACKED_ROW * n);
  const times = (col: Uint32Array) => col.subarray(0, n).map((t) => toOffset(t, ts));
  let o = 0;
  for (const col of [times(e.ts), e.scores, e.ranks, times(e.expires), times(e.prevExpires)]) {
    // Byte planes: every low byte, then every second byte, ...
    for (let plane = 0; plane < 4; plane++) {
      const shift = 8 * plane;
      for (let i = 0; i < n; i++) out[o + i] = (col[i]! >>> shift) & 0xff;
      o += n;
    }
  }
  for (const col of [e.codes, e.prev, e.causes]) {
    out.set(col.subarray(0, n), o);
    o += n;
  }
  return out;
}

/** A block as read back: its header, its target columns as views of the file's bytes, the rest packed. */
export interface Block {
  readonly kind: Kind;
  readonly cause: Cause;
  readonly flags: number;
  readonly ts: number;
  readonly count: number;
  readonly plugin: string;
  readonly noteReason: number;
  /** Addresses: the networks and prefixes. */
  readonly starts?: Uint32Array;
  readonly prefixes?: Uint8Array;
  /** Names: "\n"-joined. */
  readonly names?: Buffer;
  readonly packed: Buffer;
  /** Bytes of the block in its file. */
  readonly bytes: number;
}

export interface Unpacked {
  ts: Uint32Array;
  /** Hundredths (NO_SCORE: none). */
  scores: Uint32Array;
  ranks: Uint32Array;
  expires: Uint32Array;
  prevExpires: Uint32Array;
  codes: Uint8Array;
  prev: Uint8Array;
  causes: Uint8Array;
}

/** A block's packed columns; undefined when they are not what its header says (a damaged file). */
export function unpack(b: Block): Unpacked | undefined {
  const n = b.count;
  let buf: Buffer;
  try {
    buf = inflateRawSync(b.packed, { maxOutputLength: Math.max(1, PACKED_ROW * n) });
  } catch {
    return undefined;
  }
  if (buf.length !== PACKED_ROW * n) return undefined;
  const column = (k: number) => {
    const col = new Uint32Array(n);
    const base = 4 * n * k;
    for (let i = 0; i < n; i++) col[i] = (buf[base + i]! | (buf[base + n + i]! << 8) | (buf[base + 2 * n + i]! << 16) | (buf[base + 3 * n + i]! << 24)) >>> 0;
    return col;
  };
  const times = (col: Uint32Array) => col.map((v) => fromOffset(v, b.ts));
  return {
    ts: times(column(0)),
    scores: column(1),
    ranks: column(2),
    expires: times(column(3)),
    prevExpires: times(column(4)),
    codes: buf.subarray(20 * n, 21 * n),
    prev: buf.subarray(21 * n, 22 * n),
    causes: buf.subarray(22 * n, 23 * n),
  };
}

/** A note's text (kind `note`). */
export function noteText(b: Block): string {
  try {
    return inflateRawSync(b.packed, { maxOutputLength: 64 * 1024 }).toString('utf8');
  } catch {
    return '';
  }
}

/**
 * The blocks of one history file's bytes, in order, up to the first one that is not whole
 * and sound (a torn tail, garbage): `valid` is where that one begins. Nothing in the file
 * is trusted: every length is checked against the bytes there are before it is used.
 */
export function readBlocks(file: Buffer): { blocks: Block[]; valid: number } {
  // Typed views need their offset aligned; a small file read into Node's pool may not be.
  const buf = file.byteOffset % 4 === 0 ? file : Buffer.from(file);
  const blocks: Block[] = [];
  let at = 0;
  for (;;) {
    const b = blockAt(buf, at);
    if (!b) return { blocks, valid: at };
    blocks.push(b);
    at += b.bytes;
  }
}

function blockAt(buf: Buffer, at: number): Block | undefined {
  if (buf.length - at < HEADER + TRAILER || buf.readUInt32LE(at) !== MAGIC || buf.readUInt8(at + 4) !== VERSION) return undefined;
  const kind = KINDS[buf.readUInt8(at + 5)];
  const count = buf.readUInt32LE(at + 12);
  const rawLen = buf.readUInt32LE(at + 16);
  const packedLen = buf.readUInt32LE(at + 20);
  const total = buf.readUInt32LE(at + 24);
  if (!kind || count > MAX_COUNT || total % 4 !== 0 || total > buf.length - at) return undefined;
  if (total !== HEADER + pad4(rawLen) + pad4(packedLen) + TRAILER) return undefined;
  if (kind === 'addresses' ? rawLen !== 5 * count : kind === 'note' ? rawLen !== 0 || count !== 0 : count === 0 ? rawLen !== 0 : rawLen === 0) return undefined;
  if (crc32(buf.subarray(at, at + total - TRAILER)) !== buf.readUInt32LE(at + total - TRAILER)) return undefined;
  const raw = at + HEADER;
  const plugin = buf.toString('latin1', at + 32, at + 40).replace(/\0+$/, '');
  return {
    kind,
    cause: causeOf(buf.readUInt8(at + 6)),
    flags: buf.readUInt8(at + 7),
    ts: buf.readUInt32LE(at + 8),
    count,
    plugin,
    noteReason: buf.readUInt8(at + 28),
    ...(kind === 'addresses'
      ? { starts: new Uint32Array(buf.buffer, buf.byteOffset + raw, count), prefixes: new Uint8Array(buf.buffer, buf.byteOffset + raw + 4 * count, count) }
      : {}),
    ...(kind === 'names' ? { names: buf.subarray(raw, raw + rawLen) } : {}),
    packed: buf.subarray(raw + pad4(rawLen), raw + pad4(rawLen) + packedLen),
    bytes: total,
  };
}
