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

function ipToNumber(ip: string): number | undefined {
  const c = toCidr(ip);
  return c && c.prefix === 32 ? c.start : undefined;
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
        const a = Array.isArray(r) && typeof r[0] === 'string' ? ipToNumber(r[0]) : undefined;
        const b = Array.isArray(r) && typeof r[1] === 'string' ? ipToNumber(r[1]) : undefined;
        if (a !== undefined && b !== undefined && a <= b) {
          const parts = rangeToCidrs(a, b);
          cidrs.push(...parts);
          if (parts.length !== 1) nonCidr++;
        }
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
    const m = /^([^\s,]+)(?: timeout (\d+)s)?,?$/.exec(line);
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
