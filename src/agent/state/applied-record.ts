/**
 * The applied-set record (`applied-<plugin>.json`) as text written and read a
 * piece at a time. At a million entries the record is ~65 MB of JSON: built as
 * one string it cost that string, its UTF-8 copy and, on reading, the file's
 * text as one more string before parsing. So the record is written one entry
 * per line, still one valid JSON document (any JSON tool, and an older agent,
 * reads it):
 *
 *   {"ts":1700000000,"plugin":"nftables","entries":[
 *   {"cidr":"203.0.113.0/24","reason":"score","expiresAt":1700086400},
 *   {"cidr":"198.51.100.7/32","reason":"manual","expiresAt":null}
 *   ]}
 *
 * and read line by line from the file's bytes, each line parsed on its own. A
 * record in any other layout (written by an older agent as one line) is parsed
 * whole, so an upgrade restores what was applied.
 */

import { TextBuilder } from '../../util/text-builder.js';
import { AppliedColumns } from './applied-columns.js';
import { toCidr, type Cidr } from '../../net/ipv4.js';
import type { Reason } from '../../policy/types.js';

export interface AppliedRecordEntry {
  cidr: string;
  reason: string;
  expiresAt: number | null;
}

/** Entries per written chunk: a few hundred kB of text at a time. */
const ENTRIES_PER_CHUNK = 4096;
const NL = 0x0a;
const CLOSE_BRACKET = 0x5d;

/** The record as UTF-8 chunks, for an atomic write that takes them one after the other. */
export function* encodeAppliedRecord(ts: number, plugin: string, entries: readonly AppliedRecordEntry[] | AppliedColumns): Generator<Buffer> {
  yield Buffer.from(`${JSON.stringify({ ts, plugin }).slice(0, -1)},"entries":[\n`);
  for (let i = 0; i < entries.length; i += ENTRIES_PER_CHUNK) {
    const end = Math.min(entries.length, i + ENTRIES_PER_CHUNK);
    if (entries instanceof AppliedColumns) {
      yield columnLines(entries, i, end);
      continue;
    }
    let text = '';
    for (let j = i; j < end; j++) {
      const e = entries[j]!;
      text += JSON.stringify({ cidr: e.cidr, reason: e.reason, expiresAt: e.expiresAt });
      text += j < entries.length - 1 ? ',\n' : '\n';
    }
    yield Buffer.from(text);
  }
  yield Buffer.from(']}\n');
}

/**
 * Entries [from, to) of columns as the lines above, byte for byte what
 * JSON.stringify writes for each entry (the CIDR and the reason need no
 * escaping; a number is written as String(n), as JSON does), without a string
 * per entry. The builder is a fresh one per chunk: the caller writes it out.
 */
function columnLines(c: AppliedColumns, from: number, to: number): Buffer {
  const t = new TextBuilder((to - from) * 80 + 64); // a line is at most 72 bytes: no copy on the way
  for (let j = from; j < to; j++) {
    t.str('{"cidr":"').cidr(c.starts[j]!, c.prefixes[j]!).str('","reason":"').str(c.reason(j)).str('","expiresAt":');
    const e = c.expiresAt(j);
    if (e === null) t.str('null');
    else t.num(e);
    t.str(j < c.length - 1 ? '},\n' : '}\n');
  }
  return t.toBuffer();
}

/** The fixed parts of an entry line as the writer makes it. */
const CIDR_OPEN = Buffer.from('{"cidr":"');
const REASON_OPEN = Buffer.from('","reason":"');
const EXPIRES_OPEN = Buffer.from('","expiresAt":');
const NULL = Buffer.from('null');
/** One shared string per reason instead of a million copies of "score". */
const REASONS = ['score', 'manual', 'url', 'local'].map((r) => ({ bytes: Buffer.from(r), text: r }));
const CH = { dot: 0x2e, slash: 0x2f, zero: 0x30, nine: 0x39, a: 0x61, z: 0x7a, quote: 0x22, close: 0x7d, comma: 0x2c };

function literalAt(buf: Buffer, at: number, end: number, lit: Buffer): boolean {
  if (at + lit.length > end) return false;
  for (let i = 0; i < lit.length; i++) if (buf[at + i] !== lit[i]) return false;
  return true;
}

function reasonText(buf: Buffer, from: number, to: number): string {
  for (const r of REASONS) if (r.bytes.length === to - from && literalAt(buf, from, to, r.bytes)) return r.text;
  return buf.toString('latin1', from, to);
}

/**
 * An entry line in the writer's exact layout, read straight from the bytes (a
 * million times: no line string, no regex match, only the address is made into
 * a string). Undefined for anything else, which is then parsed as JSON.
 */
function entryFromBytes(buf: Buffer, start: number, end: number): AppliedRecordEntry | undefined {
  if (!literalAt(buf, start, end, CIDR_OPEN)) return undefined;
  let p = start + CIDR_OPEN.length;
  let q = p;
  while (q < end && ((buf[q]! >= CH.zero && buf[q]! <= CH.nine) || buf[q] === CH.dot || buf[q] === CH.slash)) q++;
  if (q === p || q - p > 18 || !literalAt(buf, q, end, REASON_OPEN)) return undefined;
  const cidr = buf.toString('latin1', p, q);
  p = q + REASON_OPEN.length;
  q = p;
  while (q < end && buf[q]! >= CH.a && buf[q]! <= CH.z) q++;
  if (q === p || !literalAt(buf, q, end, EXPIRES_OPEN)) return undefined;
  const reason = reasonText(buf, p, q);
  p = q + EXPIRES_OPEN.length;
  let expiresAt: number | null = null;
  if (literalAt(buf, p, end, NULL)) p += NULL.length;
  else {
    let n = 0;
    for (q = p; q < end && buf[q]! >= CH.zero && buf[q]! <= CH.nine && q - p < 16; q++) n = n * 10 + (buf[q]! - CH.zero);
    if (q === p) return undefined;
    expiresAt = n;
    p = q;
  }
  if (buf[p] !== CH.close) return undefined;
  p++;
  if (p < end && buf[p] === CH.comma) p++;
  return p === end ? { cidr, reason, expiresAt } : undefined;
}

/**
 * The record's content as a plain value (shape checked by the caller), read
 * line by line when it has the layout above, else parsed whole. Throws
 * SyntaxError when it is not valid JSON. With `onEntry`, each entry goes to it
 * as it is read and the value's `entries` is left empty: a million entries are
 * then never held as one array of objects.
 */
export function decodeAppliedRecord(buf: Buffer, onEntry?: (entry: unknown) => void): unknown {
  const firstNl = buf.indexOf(NL);
  const head = firstNl === -1 ? '' : buf.toString('utf8', 0, firstNl);
  if (!head.startsWith('{') || !head.endsWith('"entries":[')) {
    const whole = JSON.parse(buf.toString('utf8')) as unknown;
    const list = (whole as { entries?: unknown } | null)?.entries;
    if (onEntry && Array.isArray(list)) {
      for (const e of list) onEntry(e);
      (whole as { entries: unknown[] }).entries = [];
    }
    return whole;
  }
  const record = JSON.parse(`${head}]}`) as Record<string, unknown>;
  const entries: unknown[] = [];
  let start = firstNl + 1;
  for (;;) {
    const nl = buf.indexOf(NL, start);
    let end = nl === -1 ? buf.length : nl;
    while (end > start && (buf[end - 1] === 0x20 || buf[end - 1] === 0x0d || buf[end - 1] === 0x09)) end--;
    if (end - start === 2 && buf[start] === CLOSE_BRACKET && buf[start + 1] === CH.close) {
      // Nothing but white space may follow the document's end.
      if (nl !== -1 && buf.toString('utf8', nl + 1).trim() !== '') throw new SyntaxError('text after the end of the record');
      break;
    }
    if (nl === -1) throw new SyntaxError('the record ends before its last line');
    // A comma on every entry but the last, as JSON requires.
    if ((buf[end - 1] === CH.comma) === (buf[nl + 1] === CLOSE_BRACKET)) throw new SyntaxError('entries are not separated by commas');
    let entry: unknown = entryFromBytes(buf, start, end);
    if (entry === undefined) {
      // Anything else (edited by hand, other spacing) still has to be valid JSON.
      const line = buf.toString('utf8', start, end);
      entry = JSON.parse(line.endsWith(',') ? line.slice(0, -1) : line);
    }
    if (onEntry) onEntry(entry);
    else entries.push(entry);
    start = nl + 1;
  }
  record.entries = entries;
  return record;
}

/** The applied-set record with its entries as columns (see StateStore.loadAppliedColumns). */
export interface AppliedRecordColumns {
  ts: number;
  plugin: string;
  columns: AppliedColumns;
}

/** Valid JSON is not yet an applied set: `null`, a list or a bare value must not crash the restore. */
export function appliedRecordShape(raw: unknown): { ts: number; plugin: string; entries: unknown[] } | undefined {
  const r = raw as { ts?: unknown; plugin?: unknown; entries?: unknown } | null;
  if (r === null || typeof r !== 'object' || !Array.isArray(r.entries) || typeof r.ts !== 'number') return undefined;
  return { ts: r.ts, plugin: String(r.plugin), entries: r.entries as unknown[] };
}

/** An entry as the restore takes it (a CIDR it parses, an expiry that is a number or null), with its CIDR; else undefined. */
export function usableAppliedEntry(e: unknown): { entry: AppliedRecordEntry; cidr: Cidr } | undefined {
  const entry = e as Partial<AppliedRecordEntry> | null;
  if (!entry || typeof entry.cidr !== 'string' || !(entry.expiresAt === null || typeof entry.expiresAt === 'number')) return undefined;
  const cidr = toCidr(entry.cidr);
  return cidr ? { entry: entry as AppliedRecordEntry, cidr } : undefined;
}

/**
 * The record decoded straight into columns (each line's object lives only until it is
 * pushed), the entries checked as loadApplied checks them; `record` is the rest of the
 * document with `entries` empty, for the caller's shape check. Throws as decodeAppliedRecord.
 */
export function decodeAppliedColumns(buf: Buffer): { record: unknown; columns: AppliedColumns } {
  const columns = new AppliedColumns(1024);
  const record = decodeAppliedRecord(buf, (e) => {
    const ok = usableAppliedEntry(e);
    if (ok) columns.push(ok.cidr.start, ok.cidr.prefix, (ok.entry.reason as Reason | undefined) ?? 'score', ok.entry.expiresAt);
  });
  return { record, columns };
}
