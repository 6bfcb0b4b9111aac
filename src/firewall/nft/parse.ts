import { rangeToCidrs } from '../../net/cidr-index.js';
import { toCidr, type Cidr } from '../../net/ipv4.js';
import { EntryColumns } from '../entry-columns.js';
import type { Side } from '../direction.js';
import type { HitCounter } from '../plugin.js';
import { parseNftJson } from './json.js';

/** What nft prints read back (pure): a set's elements from `nft -j`, a dry-run script's elements, the hits sets. */

export interface NftSetParsed {
  /** The elements with their remaining seconds (NaN = permanent). Ranges are split into CIDRs. */
  readonly entries: EntryColumns;
  /** Elements that are not one CIDR (ranges from auto-merge, other families): the set needs a full rebuild. */
  readonly nonCidr: number;
}

function ipToNumber(ip: unknown): number | undefined {
  const c = typeof ip === 'string' ? toCidr(ip) : undefined;
  return c && c.prefix === 32 ? c.start : undefined;
}

/** An address range (nft's auto-merged interval) as CIDRs; none when it is not one. More than one: the set needs a full rebuild. */
function rangeCidrs(first: unknown, last: unknown): Cidr[] {
  const a = ipToNumber(first);
  const b = ipToNumber(last);
  return a !== undefined && b !== undefined && a <= b ? rangeToCidrs(a, b) : [];
}

/**
 * Parse `nft -j list set` output. Elements come as plain strings, `{prefix:
 * {addr, len}}`, `{range: [a, b]}` (auto-merged intervals), or any of these
 * wrapped in `{elem: {val, timeout, expires}}`.
 */
export function parseNftSetJson(json: string): NftSetParsed {
  const entries = new EntryColumns(1024);
  let nonCidr = 0;
  const items = parseNftJson(json);
  for (const item of items) {
    const set = (item as { set?: { elem?: unknown } }).set;
    if (!set || !Array.isArray(set.elem)) continue;
    for (const raw of set.elem) {
      let val: unknown = raw;
      let remaining: number | undefined;
      if (raw && typeof raw === 'object' && 'elem' in raw) {
        const el = (raw as { elem: { val?: unknown; timeout?: unknown; expires?: unknown } }).elem;
        val = el.val;
        const t = typeof el.expires === 'number' ? el.expires : typeof el.timeout === 'number' ? el.timeout : undefined;
        // A timed element in its last second reports `expires 0`; it is still there.
        remaining = t === undefined ? undefined : Math.max(t, 1);
      }
      // The networks' set's key is the address and the family (`{concat: [address, "ipv4"]}`, see NftParts).
      if (val && typeof val === 'object' && 'concat' in val) {
        const c = (val as { concat: unknown }).concat;
        val = Array.isArray(c) && c.length === 2 && c[1] === 'ipv4' ? c[0] : undefined;
      }
      const cidrs: Cidr[] = [];
      if (typeof val === 'string') {
        const c = toCidr(val);
        if (c) cidrs.push(c);
      } else if (val && typeof val === 'object' && 'prefix' in val) {
        const p = (val as { prefix: { addr?: unknown; len?: unknown } }).prefix;
        const c = typeof p.addr === 'string' && typeof p.len === 'number' ? toCidr(p.len === 32 ? p.addr : `${p.addr}/${p.len}`) : undefined;
        if (c) cidrs.push(c);
      } else if (val && typeof val === 'object' && 'range' in val) {
        const r = (val as { range: unknown }).range;
        const parts = Array.isArray(r) ? rangeCidrs(r[0], r[1]) : [];
        cidrs.push(...parts);
        if (parts.length > 1) nonCidr++;
      }
      if (cidrs.length === 0) {
        nonCidr++;
        continue;
      }
      for (const c of cidrs) entries.push(c.start, c.prefix, remaining);
    }
  }
  return { entries, nonCidr };
}


/** nft's text durations (`1d2h3m4s500ms`, as `list set` prints timeouts and expiries): milliseconds, undefined if not one. */
const DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/;
export function parseNftDuration(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m || text === '') return undefined;
  const [d, h, min, sec, ms] = m.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number];
  return (((d * 24 + h) * 60 + min) * 60 + sec) * 1000 + ms;
}

/**
 * Parse `nft list set` text output, the form that costs nft half the memory of `-j`: at a
 * million elements nft 1.0.6 held 645 MB printing text and 1.25 GB building JSON (the same
 * fetch underneath), and the agent parses the text without an object per element. Same
 * result as parseNftSetJson (remaining seconds from `expires`, else `timeout`; ranges split
 * into CIDRs; anything else counted in `nonCidr`). Answers undefined when an element carries a
 * quoted string (a comment someone added): the caller reads the JSON form instead, where a
 * comma inside quotes cannot be taken for the end of an element.
 */
export function parseNftSetText(text: string): NftSetParsed | undefined {
  const entries = new EntryColumns(1024);
  let nonCidr = 0;
  for (let from = text.indexOf('elements = {'); from !== -1; from = text.indexOf('elements = {', from)) {
    const open = from + 'elements = {'.length;
    const close = text.indexOf('}', open);
    if (close === -1) return undefined;
    const block = text.slice(open, close);
    if (block.includes('"')) return undefined;
    from = close;
    for (const raw of block.split(',')) {
      const words = raw.trim().split(/\s+/);
      if (words[0] === '') continue;
      // The networks' set's key is the address and the family: `46.0.0.0/24 . ipv4` (see NftParts).
      if (words[1] === '.' && words[2] === 'ipv4') words.splice(1, 2);
      let timeoutMs: number | undefined;
      let expiresMs: number | undefined;
      let known = true;
      for (let i = 1; i < words.length && known; i += 2) {
        const ms = parseNftDuration(words[i + 1] ?? '');
        if (ms === undefined) known = false;
        else if (words[i] === 'timeout') timeoutMs = ms;
        else if (words[i] === 'expires') expiresMs = ms;
        else known = false;
      }
      const cidrs: Cidr[] = [];
      const value = words[0]!;
      const dash = value.indexOf('-');
      if (known && dash !== -1) {
        const parts = rangeCidrs(value.slice(0, dash), value.slice(dash + 1));
        cidrs.push(...parts);
        if (parts.length > 1) nonCidr++;
      } else if (known) {
        const c = toCidr(value);
        if (c) cidrs.push(c);
      }
      if (cidrs.length === 0) {
        nonCidr++;
        continue;
      }
      const ms = expiresMs ?? timeoutMs;
      // As in the JSON form: whole seconds, and an element in its last second is still there.
      const remaining = ms === undefined ? undefined : Math.max(Math.floor(ms / 1000), 1);
      for (const c of cidrs) entries.push(c.start, c.prefix, remaining);
    }
  }
  return { entries, nonCidr };
}

/**
 * Elements of an nft script rendered by pushNftTable (one element per line
 * inside `elements = { ... }`): CIDR -> timeout seconds (undefined = none).
 */
export function parseNftScriptElements(text: string): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  let inside = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!inside) {
      if (line === 'elements = {') inside = true;
      continue;
    }
    if (line === '}') {
      inside = false; // the next set's elements may follow
      continue;
    }
    const m = /^([^\s,]+)(?: \. ipv4)?(?: timeout (\d+)s)?,?$/.exec(line);
    const cidr = m ? toCidr(m[1]!) : undefined;
    if (cidr) out.set(cidr.text, m![2] === undefined ? undefined : Number(m![2]));
  }
  return out;
}

/**
 * Addresses recorded in the hits sets (`nft -j list set` of each), with their
 * counters: `{elem: {val, expires, counter: {packets, bytes}}}`.
 */
export function parseNftHits(json: string, side: Side): HitCounter[] {
  const out: HitCounter[] = [];
  for (const item of parseNftJson(json)) {
    const set = (item as { set?: { elem?: unknown } }).set;
    if (!set || !Array.isArray(set.elem)) continue;
    for (const raw of set.elem as unknown[]) {
      const el = (raw as { elem?: { val?: unknown; counter?: { packets?: unknown; bytes?: unknown } } } | null)?.elem;
      const c = el?.counter;
      if (typeof el?.val !== 'string' || typeof c?.packets !== 'number' || typeof c.bytes !== 'number') continue;
      if (!toCidr(el.val) || c.packets === 0) continue;
      out.push({ ip: el.val, side, packets: c.packets, bytes: c.bytes });
    }
  }
  return out;
}
