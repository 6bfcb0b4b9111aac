import { cidrAt, toCidr } from '../../net/ipv4.js';
import { EntryColumns } from '../entry-columns.js';
import { IPSET_MARK_ADDRESS, ownerMark } from '../ownership.js';
import { ENTRY_LINE_MAX, TextBuilder } from '../../util/text-builder.js';

/** ipset restore text (pure): the set's creation and sizing, full and delta scripts, and `ipset save` read back. */

export interface IpsetSizing {
  readonly hashsize: number;
  readonly maxelem: number;
}

/**
 * hashsize/maxelem from the configured capacity (maximum_rules) or the entry
 * count if larger. hashsize about a quarter of the entries (power of two;
 * ipset grows it anyway, but each growth re-hashes the whole set during the
 * restore); maxelem never below ipset's default 65536.
 */
export function ipsetSizing(capacity: number, count: number): IpsetSizing {
  // +1: the ownership marker element takes a slot too.
  const target = Math.max(1, Math.ceil(capacity) || 1, count) + 1;
  let hashsize = 1024;
  while (hashsize * 4 < target && hashsize < 1 << 22) hashsize *= 2;
  return { hashsize, maxelem: Math.max(65536, target) };
}

export function renderIpsetCreate(setName: string, sizing: IpsetSizing): string {
  // `timeout 0` on the set enables per-entry timeouts; entries added without one are permanent.
  // `comment` lets the set hold the ownership marker element.
  return `create ${setName} hash:net family inet hashsize ${sizing.hashsize} maxelem ${sizing.maxelem} timeout 0 comment`;
}

/** The ownership marker element (see ownership.ts): matches nothing (`nomatch`), names the owner. */
export function renderIpsetMarker(setName: string, instance?: string): string {
  return `add ${setName} ${IPSET_MARK_ADDRESS} nomatch comment "${ownerMark(instance)}"`;
}

/** `add SET cidr [timeout N]` lines, each ended by a newline, written into `t` (no string per line). */
export function writeIpsetAdds(t: TextBuilder, setName: string, entries: EntryColumns): void {
  const head = `add ${setName} `;
  const { starts, prefixes, timeouts } = entries;
  for (let i = 0; i < entries.length; i++) {
    t.str(head).cidr(starts[i]!, prefixes[i]!);
    const timeout = timeouts[i]!;
    if (!Number.isNaN(timeout)) t.str(' timeout ').num(timeout);
    t.byte(10);
  }
}

export interface IpsetFullOptions {
  readonly setName: string;
  readonly tempName: string;
  /** The agent instance whose marker the set carries (see ownership.ts). */
  readonly instance?: string;
  readonly sizing: IpsetSizing;
  /** The live set exists: swap the temp set in; otherwise rename it. */
  readonly setExists: boolean;
  /** Lines run after the swap in the same process (the hits sets' `create ... -exist`). */
  readonly after?: readonly string[];
}

/**
 * One `ipset restore` script for a full replacement: build the temp set, then
 * swap it with the live one (or rename it when there is none) and destroy the
 * old contents. ipset restore stops at the first failing line, so a rejected
 * entry means the swap never runs and the live set is untouched.
 */
export function renderIpsetFull(o: IpsetFullOptions, entries: EntryColumns): string {
  return ipsetFullScript(o, entries).toString();
}

/** What renderIpsetFull renders, as bytes for the command's stdin (a million lines: no string of them). */
export function ipsetFullScript(o: IpsetFullOptions, entries: EntryColumns): Buffer {
  const t = new TextBuilder(entries.length * (o.tempName.length + ENTRY_LINE_MAX) + 4096);
  t.str(`${renderIpsetCreate(o.tempName, o.sizing)}\n${renderIpsetMarker(o.tempName, o.instance)}\n`);
  writeIpsetAdds(t, o.tempName, entries);
  if (o.setExists) t.str(`swap ${o.tempName} ${o.setName}\ndestroy ${o.tempName}\n`);
  else t.str(`rename ${o.tempName} ${o.setName}\n`);
  for (const line of o.after ?? []) t.str(line).str('\n');
  return t.toBuffer();
}

/**
 * Delta script, run with `ipset -exist restore`: `del` of an entry that
 * already expired is then not an error, and `add -exist` of an entry that is
 * present updates its timeout (no timeout = permanent again, the set's
 * default being 0). Dels first so the set never exceeds maxelem midway.
 */
export function renderIpsetDelta(setName: string, add: EntryColumns, del: EntryColumns): string {
  return ipsetDeltaScript(setName, add, del).toString();
}

/** What renderIpsetDelta renders, as bytes for the command's stdin. */
export function ipsetDeltaScript(setName: string, add: EntryColumns, del: EntryColumns): Buffer {
  const t = new TextBuilder((add.length + del.length) * (setName.length + ENTRY_LINE_MAX) + 4096);
  const head = `del ${setName} `;
  for (let i = 0; i < del.length; i++) t.str(head).cidr(del.starts[i]!, del.prefixes[i]!).byte(10);
  writeIpsetAdds(t, setName, add);
  return t.toBuffer();
}

/** `create` options that take no value. */
const IPSET_FLAGS = new Set(['comment', 'counters', 'skbinfo', 'forceadd']);

export interface IpsetSaveParsed {
  /** `create` line seen. */
  readonly exists: boolean;
  /** Set type (`hash:net`) and create options as key -> value (`timeout` -> `0`). */
  readonly type: string | undefined;
  readonly createOptions: ReadonlyMap<string, string>;
  /** The entries, with their remaining seconds (NaN = permanent), in the listing's order. */
  readonly entries: EntryColumns;
  /** Entries with options the agent never sets (nomatch, comment, ...) or that did not parse. */
  readonly odd: number;
  /** The set holds the agent's ownership marker element (not counted in `entries` or `odd`). */
  readonly marked: boolean;
  /** The marker element's comment (`wcf-agent`, `wcf-agent <instance>`), when there is one. */
  readonly mark?: string;
}

/** Characters String.prototype.trimEnd removes (WhiteSpace and LineTerminator). */
function isTrimmed(c: number): boolean {
  return (
    (c >= 9 && c <= 13) || c === 32 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/** Decimal digits in text[from, to) as a number, or NaN if anything else (then the caller asks Number). */
function digitsValue(text: string, from: number, to: number): number {
  if (to - from > 15) return NaN;
  let v = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return NaN;
    v = v * 10 + c;
  }
  return v;
}

/**
 * Parse `ipset save SET` output (also the agent's own dry-run files).
 *
 * Read in place with indexOf over the text: a million-entry set is one string
 * of ~50 MB, and splitting it into lines and each line into words made several
 * short-lived strings and arrays per entry, enough garbage to make the heap
 * grow. Each line is read as `line.trimEnd()` split on single spaces would be.
 */
export function parseIpsetSave(text: string, setName: string): IpsetSaveParsed {
  const entries = new EntryColumns(1024);
  const at = { start: 0, prefix: 0 };
  const createOptions = new Map<string, string>();
  let exists = false;
  let type: string | undefined;
  let odd = 0;
  let marked = false;
  let mark: string | undefined;
  const addHead = `add ${setName} `;
  const markHead = `${addHead}${IPSET_MARK_ADDRESS} `;
  const markTail = /^ nomatch comment "(wcf-agent(?: [0-9a-f]{16})?)"$/;
  const createHead = `create ${setName} `;
  const n = text.length;
  for (let pos = 0; pos <= n; ) {
    let end = text.indexOf('\n', pos);
    if (end === -1) end = n;
    let e = end; // the line is text[pos, e), trailing whitespace removed
    while (e > pos && isTrimmed(text.charCodeAt(e - 1))) e--;
    const from = pos;
    pos = end + 1;
    const tail = text.startsWith(markHead, from) ? markTail.exec(text.slice(from, e).replace(/^.*?( nomatch comment ")/, '$1')) : null;
    if (tail) {
      marked = true; // `ipset save` prints it as `add S 255.255.255.255 timeout 0 nomatch comment "wcf-agent"`
      mark = tail[1];
    } else if (e - from >= addHead.length && text.startsWith(addHead, from)) {
      const cidrFrom = from + addHead.length;
      let space = text.indexOf(' ', cidrFrom);
      if (space >= e) space = -1;
      if (!cidrAt(text, cidrFrom, space === -1 ? e : space, at)) {
        odd++;
        continue;
      }
      let timeout: number | undefined;
      if (space !== -1) {
        // Exactly `CIDR timeout N` (three words): anything else is an option the agent never sets.
        const value = space + 9; // after ` timeout `
        const next = text.indexOf(' ', value);
        if (value < e && text.startsWith('timeout ', space + 1) && (next === -1 || next >= e)) {
          let t = digitsValue(text, value, e);
          if (Number.isNaN(t)) t = Number(text.slice(value, e));
          timeout = t > 0 ? t : undefined; // `timeout 0` = permanent
        } else {
          odd++;
        }
      }
      entries.push(at.start, at.prefix, timeout);
    } else if (e - from >= createHead.length && text.startsWith(createHead, from)) {
      exists = true;
      const parts = text.slice(from + createHead.length, e).split(' ');
      type = parts[0];
      for (let i = 1; i < parts.length; i++) {
        const key = parts[i]!;
        // Extensions are bare words; every other option has a value.
        if (IPSET_FLAGS.has(key)) createOptions.set(key, '');
        else createOptions.set(key, parts[++i] ?? '');
      }
    }
  }
  return { exists, type, createOptions, entries, odd, marked, ...(mark ? { mark } : {}) };
}

/** Most addresses a hits set records; one hit once it is full is still blocked, only not counted. */
export const HITS_MAXELEM = 65536;
/** An address not hit for this long leaves its hits set (the agent keeps its running total). */
export const HITS_TIMEOUT_S = 7 * 86400;

/**
 * A hits set's `create` line for an `ipset restore` script (single addresses
 * with counters, filled by the SET target). `-exist` on the line makes it a
 * no-op for a hits set already there, so nothing asks `ipset list -n` first.
 */
export function renderHitsSetCreate(name: string): string {
  return `create ${name} hash:ip family inet maxelem ${HITS_MAXELEM} timeout ${HITS_TIMEOUT_S} counters -exist`;
}

/** `ipset save` of a hits set: `add SET 192.0.2.7 timeout N packets P bytes B`, the addresses hit. */
export function parseIpsetHits(text: string, side: 'in' | 'out'): Array<{ ip: string; side: 'in' | 'out'; packets: number; bytes: number }> {
  const out: Array<{ ip: string; side: 'in' | 'out'; packets: number; bytes: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^add \S+ (\S+)\b.*? packets (\d+) bytes (\d+)/.exec(line);
    if (!m || !toCidr(m[1]!)) continue;
    const packets = Number(m[2]);
    if (packets > 0) out.push({ ip: m[1]!, side, packets, bytes: Number(m[3]) });
  }
  return out;
}
