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
export function* encodeAppliedRecord(ts: number, plugin: string, entries: readonly AppliedRecordEntry[]): Generator<Buffer> {
  yield Buffer.from(`${JSON.stringify({ ts, plugin }).slice(0, -1)},"entries":[\n`);
  for (let i = 0; i < entries.length; i += ENTRIES_PER_CHUNK) {
    const end = Math.min(entries.length, i + ENTRIES_PER_CHUNK);
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

/** One entry line as the writer makes it, read without a general JSON parse (the common case, a million times). */
const ENTRY_LINE = /^\{"cidr":"([0-9./]{1,18})","reason":"([a-z]{1,10})","expiresAt":(null|\d{1,16})\},?$/;

/** Where the address starts in such a line (after `{"cidr":"`). */
const CIDR_AT = 9;
/** One shared string per reason instead of a million copies of "score". */
const REASONS = new Map(['score', 'manual', 'url', 'local'].map((r) => [r, r]));

/** `line` is the text of `buf` from byte `at`. */
function parseEntryLine(line: string, buf: Buffer, at: number): unknown {
  const m = ENTRY_LINE.exec(line);
  if (m) {
    // Copied out of the bytes, not sliced from `line`: a slice would keep the whole line alive as long as the entry.
    const cidr = buf.toString('latin1', at + CIDR_AT, at + CIDR_AT + m[1]!.length);
    return { cidr, reason: REASONS.get(m[2]!) ?? m[2]!, expiresAt: m[3] === 'null' ? null : Number(m[3]) };
  }
  // Anything else (edited by hand, other spacing) still has to be valid JSON.
  return JSON.parse(line.endsWith(',') ? line.slice(0, -1) : line);
}

/**
 * The record's content as a plain value (shape checked by the caller), read
 * line by line when it has the layout above, else parsed whole. Throws
 * SyntaxError when it is not valid JSON.
 */
export function decodeAppliedRecord(buf: Buffer): unknown {
  const firstNl = buf.indexOf(NL);
  const head = firstNl === -1 ? '' : buf.toString('utf8', 0, firstNl);
  if (!head.startsWith('{') || !head.endsWith('"entries":[')) return JSON.parse(buf.toString('utf8'));
  const record = JSON.parse(`${head}]}`) as Record<string, unknown>;
  const entries: unknown[] = [];
  let start = firstNl + 1;
  for (;;) {
    const nl = buf.indexOf(NL, start);
    const line = buf.toString('utf8', start, nl === -1 ? buf.length : nl).trimEnd();
    if (line === ']}') {
      // Nothing but white space may follow the document's end.
      if (nl !== -1 && buf.toString('utf8', nl + 1).trim() !== '') throw new SyntaxError('text after the end of the record');
      break;
    }
    if (nl === -1) throw new SyntaxError('the record ends before its last line');
    // A comma on every entry but the last, as JSON requires.
    const isLast = buf[nl + 1] === CLOSE_BRACKET;
    if (line.endsWith(',') === isLast) throw new SyntaxError('entries are not separated by commas');
    entries.push(parseEntryLine(line, buf, start));
    start = nl + 1;
  }
  record.entries = entries;
  return record;
}
