import { FirewallError } from '../errors.js';
import { compareCidr, fromNumber, toCidr, type Cidr } from '../net/ipv4.js';
import type { FirewallEntry } from './types.js';

/**
 * Ruleset rendering shared by the kernel plugins and dry-run: ipset restore
 * text, iptables-restore lines and nft scripts. Everything here is pure (no
 * commands) and linear in the number of entries: a million entries render as
 * one array join.
 */

// ---------------------------------------------------------------------------
// Entries

/**
 * Largest timeout used for the kernel, in seconds. ipset refuses more than
 * 2147483 s (UINT_MAX / 1000: the kernel keeps timeouts in milliseconds in 32
 * bits); nft accepts a bit more but the same clamp keeps both plugins alike.
 * Clamping is safe: the agent recomputes timeouts and re-applies them every
 * cycle, so an entry that should live longer is refreshed long before 24.8
 * days have passed.
 */
export const MAX_KERNEL_TIMEOUT_S = 2_147_483;

/** An entry ready for the kernel: parsed CIDR, timeout in whole seconds (undefined = permanent). */
export interface KernelEntry {
  readonly cidr: Cidr;
  readonly timeout: number | undefined;
}

/**
 * Seconds for the kernel: rounded up, at least 1, at most MAX_KERNEL_TIMEOUT_S.
 * Never 0: for ipset `timeout 0` means "permanent", the opposite of "about to
 * expire".
 */
export function kernelTimeout(seconds: number | undefined): number | undefined {
  if (seconds === undefined) return undefined;
  if (Number.isNaN(seconds)) throw new FirewallError('entry timeout is NaN');
  if (seconds >= MAX_KERNEL_TIMEOUT_S) return MAX_KERNEL_TIMEOUT_S;
  return seconds <= 1 ? 1 : Math.ceil(seconds);
}

/**
 * Open-addressing hash from a CIDR (network address + prefix) to an array
 * index, in typed arrays: no allocation per entry. A Map keyed by CIDR text
 * costs ~0.5 s and a lot of garbage for a million entries; this costs tens of
 * milliseconds. Sized once for the expected count (load factor <= 0.5).
 */
export class CidrIndex {
  private readonly starts: Uint32Array;
  private readonly prefixes: Uint8Array;
  /** index + 1; 0 = empty slot. */
  private readonly values: Int32Array;
  private readonly mask: number;

  constructor(expected: number) {
    let size = 16;
    while (size < expected * 2) size *= 2;
    this.starts = new Uint32Array(size);
    this.prefixes = new Uint8Array(size);
    this.values = new Int32Array(size);
    this.mask = size - 1;
  }

  private slot(start: number, prefix: number): number {
    let h = Math.imul(start ^ Math.imul(prefix + 1, 0x9e3779b1), 0x85ebca6b);
    h ^= h >>> 15;
    let i = h & this.mask;
    while (this.values[i] !== 0 && (this.starts[i] !== start || this.prefixes[i] !== prefix)) i = (i + 1) & this.mask;
    return i;
  }

  /** The index stored for this CIDR, or -1. */
  get(start: number, prefix: number): number {
    return this.values[this.slot(start, prefix)]! - 1;
  }

  /** Store `index` unless the CIDR is present; returns the index already stored, or -1 when inserted. */
  add(start: number, prefix: number, index: number): number {
    const i = this.slot(start, prefix);
    const existing = this.values[i]!;
    if (existing !== 0) return existing - 1;
    this.starts[i] = start;
    this.prefixes[i] = prefix;
    this.values[i] = index + 1;
    return -1;
  }
}

/**
 * Validate, canonicalise and de-duplicate entries (input order kept). For
 * duplicates the longest timeout wins (permanent beats any timeout). Throws
 * FirewallError (before any command runs) on an entry that is not an IPv4
 * address or network, so no malformed text can reach a restore script.
 */
export function normalizeEntries(entries: readonly FirewallEntry[]): KernelEntry[] {
  const out: KernelEntry[] = [];
  const index = new CidrIndex(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const cidr = e.parsed !== undefined && e.parsed.text === e.cidr ? e.parsed : toCidr(e.cidr);
    if (!cidr) throw new FirewallError(`refusing to apply entry ${i}: not an IPv4 address or network: ${JSON.stringify(String(e.cidr).slice(0, 40))}`);
    let timeout: number | undefined;
    try {
      timeout = kernelTimeout(e.timeoutSeconds);
    } catch {
      throw new FirewallError(`refusing to apply entry ${i} (${cidr.text}): timeout is not a number`);
    }
    const prev = index.add(cidr.start, cidr.prefix, out.length);
    if (prev === -1) out.push({ cidr, timeout });
    else {
      const p = out[prev]!;
      if (p.timeout !== undefined && (timeout === undefined || timeout > p.timeout)) out[prev] = { cidr: p.cidr, timeout };
    }
  }
  return out;
}

/** Smallest list of CIDRs covering exactly [start, end] (unsigned 32-bit). */
export function rangeToCidrs(start: number, end: number): Cidr[] {
  const out: Cidr[] = [];
  let cur = start;
  while (cur <= end) {
    // Largest aligned block starting at `cur`...
    let size = cur === 0 ? 2 ** 32 : ((cur | 0) & -(cur | 0)) >>> 0;
    // ...that does not run past `end`.
    while (size > end - cur + 1) size /= 2;
    out.push(fromNumber(cur, 32 - Math.log2(size)));
    cur += size;
  }
  return out;
}

/**
 * Whether any entry lies inside another (entries are distinct CIDRs), without
 * sorting: for each entry, look up its enclosing networks at the prefix
 * lengths present in the list (usually two or three: /32, /24...). O(n).
 */
export function hasOverlap(entries: readonly KernelEntry[]): boolean {
  const present = new Set<number>();
  for (const e of entries) present.add(e.cidr.prefix);
  if (present.size < 2) return false;
  const prefixes = [...present].sort((a, b) => a - b);
  const index = new CidrIndex(entries.length);
  for (let i = 0; i < entries.length; i++) index.add(entries[i]!.cidr.start, entries[i]!.cidr.prefix, i);
  for (const e of entries) {
    for (const p of prefixes) {
      if (p >= e.cidr.prefix) break;
      const start = p === 0 ? 0 : (e.cidr.start & ((0xffffffff << (32 - p)) >>> 0)) >>> 0;
      if (index.get(start, p) !== -1) return true;
    }
  }
  return false;
}

interface OverlapNode {
  readonly entry: KernelEntry;
  /** Effective lifetime (Infinity = permanent). */
  readonly life: number;
  readonly children: OverlapNode[];
}

/**
 * Make entries non-overlapping for nft, keeping exactly ipset's semantics
 * ("an address is blocked while any entry covering it is alive").
 *
 * An nft interval set cannot hold a /32 inside a /24 (the kernel refuses
 * overlapping intervals), and `auto-merge` is no answer: it merges
 * overlapping *and adjacent* intervals across different timeouts (a permanent
 * /25 next to a timed /25 becomes one timed /24: the permanent block would
 * expire), and makes `nft` read the whole set on every change. So the plugin
 * uses no auto-merge and resolves overlaps here:
 *
 * - a narrower entry covered by a wider one that lives at least as long is
 *   dropped (it adds nothing);
 * - a narrower entry that outlives its cover (e.g. a permanent manual /32
 *   inside a scored /24 with a timeout) is kept, and the wider entry is split
 *   into the CIDRs around it, each with the wider entry's timeout. Extending
 *   the /24's timeout instead would over-block 255 addresses; dropping the /32
 *   would unblock it when the /24 expires.
 *
 * CIDRs nest or are disjoint, so this is a walk over the sorted list with a
 * stack of enclosing entries: O(n log n) for the sort, O(n) after. Without
 * overlaps (the normal case, checked in O(n)) the input comes back unchanged.
 */
export function resolveOverlaps(entries: readonly KernelEntry[]): KernelEntry[] {
  if (!hasOverlap(entries)) return [...entries];
  const sorted = [...entries].sort((a, b) => compareCidr(a.cidr, b.cidr));

  const roots: OverlapNode[] = [];
  const stack: OverlapNode[] = [];
  for (const entry of sorted) {
    while (stack.length > 0 && stack[stack.length - 1]!.entry.cidr.end < entry.cidr.start) stack.pop();
    const parent = stack[stack.length - 1];
    const life = entry.timeout ?? Infinity;
    if (parent && life <= parent.life) continue; // covered by a wider entry that lives at least as long
    const node: OverlapNode = { entry, life, children: [] };
    (parent ? parent.children : roots).push(node);
    stack.push(node);
  }

  const out: KernelEntry[] = [];
  const emit = (node: OverlapNode): void => {
    if (node.children.length === 0) {
      out.push(node.entry);
      return;
    }
    const { start, end } = node.entry.cidr;
    const timeout = node.entry.timeout;
    let cursor = start;
    for (const child of node.children) {
      if (child.entry.cidr.start > cursor) for (const c of rangeToCidrs(cursor, child.entry.cidr.start - 1)) out.push({ cidr: c, timeout });
      emit(child);
      cursor = child.entry.cidr.end + 1;
    }
    if (cursor <= end) for (const c of rangeToCidrs(cursor, end)) out.push({ cidr: c, timeout });
  };
  for (const r of roots) emit(r);
  return out;
}

// ---------------------------------------------------------------------------
// ipset

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
  const target = Math.max(1, Math.ceil(capacity) || 1, count);
  let hashsize = 1024;
  while (hashsize * 4 < target && hashsize < 1 << 22) hashsize *= 2;
  return { hashsize, maxelem: Math.max(65536, target) };
}

export function renderIpsetCreate(setName: string, sizing: IpsetSizing): string {
  // `timeout 0` on the set enables per-entry timeouts; entries added without one are permanent.
  return `create ${setName} hash:net family inet hashsize ${sizing.hashsize} maxelem ${sizing.maxelem} timeout 0`;
}

/** `add SET cidr [timeout N]` lines, appended to `out`. */
export function pushIpsetAdds(out: string[], setName: string, entries: Iterable<KernelEntry>): void {
  const head = `add ${setName} `;
  for (const e of entries) out.push(e.timeout === undefined ? head + e.cidr.text : `${head}${e.cidr.text} timeout ${e.timeout}`);
}

/** The same lines as pushIpsetAdds, each ended by a newline, written into `t` (no string per line). */
function writeIpsetAdds(t: TextBuilder, setName: string, entries: Iterable<KernelEntry>): void {
  const head = `add ${setName} `;
  for (const e of entries) {
    t.str(head).str(e.cidr.text);
    if (e.timeout !== undefined) t.str(' timeout ').num(e.timeout);
    t.str('\n');
  }
}

/**
 * A large text (a restore script of a million lines) built in one growing
 * Buffer instead of a million line strings joined: two to three times faster
 * at that size and no per-line garbage. `toString` gives exactly the
 * concatenation of what was written (a UTF-8 round trip; well-formed strings).
 */
export class TextBuilder {
  private buf = Buffer.allocUnsafe(1 << 16);
  private len = 0;

  private reserve(bytes: number): void {
    if (this.len + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + bytes));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  str(s: string): this {
    const n = s.length;
    this.reserve(n * 3);
    if (n <= 32) {
      // Short ASCII (addresses, keywords): copied char by char, cheaper than a call into the encoder.
      const buf = this.buf;
      const at = this.len;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) break;
        buf[at + i] = c;
      }
      if (i === n) {
        this.len += n;
        return this;
      }
    }
    this.len += this.buf.write(s, this.len, 'utf8');
    return this;
  }

  /** A number as `${n}` writes it; non-negative safe integers (timeouts) digit by digit, without a string. */
  num(n: number): this {
    if (!Number.isSafeInteger(n) || n < 0) return this.str(String(n));
    let digits = 1;
    for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
    this.reserve(digits);
    for (let k = this.len + digits - 1, x = n; k >= this.len; k--, x = Math.floor(x / 10)) this.buf[k] = 48 + (x % 10);
    this.len += digits;
    return this;
  }

  toString(): string {
    return this.buf.toString('utf8', 0, this.len);
  }
}

export interface IpsetFullOptions {
  readonly setName: string;
  readonly tempName: string;
  readonly sizing: IpsetSizing;
  /** The live set exists: swap the temp set in; otherwise rename it. */
  readonly setExists: boolean;
}

/**
 * One `ipset restore` script for a full replacement: build the temp set, then
 * swap it with the live one (or rename it when there is none) and destroy the
 * old contents. ipset restore stops at the first failing line, so a rejected
 * entry means the swap never runs and the live set is untouched.
 */
export function renderIpsetFull(o: IpsetFullOptions, entries: Iterable<KernelEntry>): string {
  const t = new TextBuilder();
  t.str(`${renderIpsetCreate(o.tempName, o.sizing)}\n`);
  writeIpsetAdds(t, o.tempName, entries);
  if (o.setExists) t.str(`swap ${o.tempName} ${o.setName}\ndestroy ${o.tempName}\n`);
  else t.str(`rename ${o.tempName} ${o.setName}\n`);
  return t.toString();
}

/**
 * Delta script, run with `ipset -exist restore`: `del` of an entry that
 * already expired is then not an error, and `add -exist` of an entry that is
 * present updates its timeout (no timeout = permanent again, the set's
 * default being 0). Dels first so the set never exceeds maxelem midway.
 */
export function renderIpsetDelta(setName: string, add: Iterable<KernelEntry>, del: Iterable<string>): string {
  const t = new TextBuilder();
  for (const c of del) t.str(`del ${setName} ${c}\n`);
  writeIpsetAdds(t, setName, add);
  return t.toString();
}

// ---------------------------------------------------------------------------
// iptables

export const LOG_PREFIX = 'wcf-agent: ';
/** Rate limit for logging blocked packets: a flood must not flood the journal. */
export const LOG_LIMIT_PER_MINUTE = 10;

/** Target as `iptables -S` prints it back (explicit reject type), so read-back compares equal. */
export function iptablesTarget(action: 'DROP' | 'REJECT'): string {
  return action === 'REJECT' ? '-j REJECT --reject-with icmp-port-unreachable' : '-j DROP';
}

export const IPT_LOG = `-m limit --limit ${LOG_LIMIT_PER_MINUTE}/min -j LOG --log-prefix "${LOG_PREFIX}"`;

/** The agent chain's contents for the ipset plugin (iptables-restore `-A` lines). */
export function iptablesSetRules(chain: string, setName: string, action: 'DROP' | 'REJECT', logBlocked: boolean): string[] {
  const match = `-A ${chain} -m set --match-set ${setName} src`;
  const rules: string[] = [];
  if (logBlocked) rules.push(`${match} ${IPT_LOG}`);
  rules.push(`${match} ${iptablesTarget(action)}`);
  return rules;
}

/** The agent chain's contents for the iptables fallback: one rule (two with logging) per entry. */
export function pushIptablesEntryRules(
  out: string[],
  chain: string,
  entries: Iterable<KernelEntry>,
  action: 'DROP' | 'REJECT',
  logBlocked: boolean,
): void {
  const target = iptablesTarget(action);
  for (const e of entries) {
    const match = `-A ${chain} -s ${e.cidr.text}`;
    if (logBlocked) out.push(`${match} ${IPT_LOG}`);
    out.push(`${match} ${target}`);
  }
}

// ---------------------------------------------------------------------------
// nftables

/**
 * Priority of the agent's base chains: just before `filter` (0), where
 * iptables-nft's own chains, firewalld and ufw sit. In nftables every base
 * chain on a hook sees the packet and a drop anywhere is final, so this is not
 * about winning over their accepts: dropping first means blocked packets cost
 * nothing in (and are not logged or counted by) the rest of the ruleset. It
 * stays after conntrack (-200) and mangle (-150), so nothing else changes for
 * other tables.
 */
export const NFT_PRIORITY = -5;

export type NftHook = 'input' | 'forward' | 'output';

/** nft hooks for the configured iptables-style hook chains (DOCKER-USER traffic is forwarded traffic). */
export function nftHooks(hookChains: readonly string[]): NftHook[] {
  const hooks = new Set<NftHook>();
  for (const h of hookChains) {
    if (h === 'INPUT') hooks.add('input');
    else if (h === 'FORWARD' || h === 'DOCKER-USER') hooks.add('forward');
    else if (h === 'OUTPUT') hooks.add('output');
  }
  if (hooks.size === 0) hooks.add('input');
  return (['input', 'forward', 'output'] as const).filter((h) => hooks.has(h));
}

export interface NftLayout {
  readonly table: string;
  readonly set: string;
  readonly hooks: readonly NftHook[];
  readonly action: 'DROP' | 'REJECT';
  readonly logBlocked: boolean;
}

/** Rules of each base chain, in nft syntax. */
export function nftChainRules(l: NftLayout): string[] {
  const rules: string[] = [];
  // Separate rules: a `limit` inside the drop rule would rate-limit the drop too.
  if (l.logBlocked) rules.push(`ip saddr @${l.set} limit rate ${LOG_LIMIT_PER_MINUTE}/minute log prefix "${LOG_PREFIX}"`);
  rules.push(`ip saddr @${l.set} counter ${l.action === 'REJECT' ? 'reject' : 'drop'}`);
  return rules;
}

function nftElement(e: KernelEntry): string {
  return e.timeout === undefined ? e.cidr.text : `${e.cidr.text} timeout ${e.timeout}s`;
}

/** `{ a, b timeout 5s, ... }`, one element per line (nft error messages quote the failing line). */
function pushNftElements(out: string[], indent: string, entries: readonly KernelEntry[]): void {
  const last = entries.length - 1;
  for (let i = 0; i <= last; i++) out.push(`${indent}${nftElement(entries[i]!)}${i === last ? '' : ','}`);
}

/** The whole table as an nft block (`table inet T { ... }`), entries must not overlap. */
export function pushNftTable(out: string[], l: NftLayout, entries: readonly KernelEntry[]): void {
  out.push(`table inet ${l.table} {`);
  out.push(`\tset ${l.set} {`, '\t\ttype ipv4_addr', '\t\tflags interval,timeout');
  if (entries.length > 0) {
    out.push('\t\telements = {');
    pushNftElements(out, '\t\t\t', entries);
    out.push('\t\t}');
  }
  out.push('\t}');
  const rules = nftChainRules(l);
  for (const hook of l.hooks) {
    out.push(`\tchain ${hook} {`, `\t\ttype filter hook ${hook} priority ${NFT_PRIORITY}; policy accept;`);
    for (const r of rules) out.push(`\t\t${r}`);
    out.push('\t}');
  }
  out.push('}');
}

/**
 * Transaction that replaces the table wholesale: `add table` + `delete table`
 * (so the delete cannot fail on a missing table) + the new table, in one
 * `nft -f` run. nft commits a file as one transaction, so packets see either
 * the old table or the new one, never an empty set.
 */
export function renderNftRecreate(l: NftLayout, entries: readonly KernelEntry[]): string {
  const out = [`add table inet ${l.table}`, `delete table inet ${l.table}`];
  pushNftTable(out, l, entries);
  out.push('');
  return out.join('\n');
}

/** Full refill of an intact table: `flush set` + `add element` in one transaction (atomic, keeps the chains' counters). */
export function renderNftRefill(l: NftLayout, entries: readonly KernelEntry[]): string {
  const out = [`flush set inet ${l.table} ${l.set}`];
  if (entries.length > 0) {
    out.push(`add element inet ${l.table} ${l.set} {`);
    pushNftElements(out, '\t', entries);
    out.push('}');
  }
  out.push('');
  return out.join('\n');
}

/**
 * Delta transaction. Each element to delete is first "added" (a no-op when
 * present): an element whose timeout ran out between our read and this
 * transaction would otherwise make `delete element` fail the whole
 * transaction. Updated elements are deleted and re-added with the new timeout
 * (older kernels do not update the timeout of an existing element on `add`).
 */
export function renderNftDelta(l: NftLayout, add: readonly KernelEntry[], del: readonly string[]): string {
  const out: string[] = [];
  const target = `inet ${l.table} ${l.set}`;
  if (del.length > 0) {
    const list = del.join(',\n\t');
    out.push(`add element ${target} {\n\t${list}\n}`, `delete element ${target} {\n\t${list}\n}`);
  }
  if (add.length > 0) {
    out.push(`add element ${target} {`);
    pushNftElements(out, '\t', add);
    out.push('}');
  }
  out.push('');
  return out.join('\n');
}

// ---------------------------------------------------------------------------
// Reading back

export interface IpsetSaveParsed {
  /** `create` line seen. */
  readonly exists: boolean;
  /** Set type (`hash:net`) and create options as key -> value (`timeout` -> `0`). */
  readonly type: string | undefined;
  readonly createOptions: ReadonlyMap<string, string>;
  /** Canonical CIDR -> remaining seconds (undefined = permanent). */
  readonly entries: Map<string, number | undefined>;
  /** Entries with options the agent never sets (nomatch, comment, ...) or that did not parse. */
  readonly odd: number;
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
  const entries = new Map<string, number | undefined>();
  const createOptions = new Map<string, string>();
  let exists = false;
  let type: string | undefined;
  let odd = 0;
  const addHead = `add ${setName} `;
  const createHead = `create ${setName} `;
  const n = text.length;
  for (let pos = 0; pos <= n; ) {
    let end = text.indexOf('\n', pos);
    if (end === -1) end = n;
    let e = end; // the line is text[pos, e), trailing whitespace removed
    while (e > pos && isTrimmed(text.charCodeAt(e - 1))) e--;
    const from = pos;
    pos = end + 1;
    if (e - from >= addHead.length && text.startsWith(addHead, from)) {
      const at = from + addHead.length;
      let space = text.indexOf(' ', at);
      if (space >= e) space = -1;
      const cidr = toCidr(text.slice(at, space === -1 ? e : space));
      if (!cidr) {
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
      entries.set(cidr.text, timeout);
    } else if (e - from >= createHead.length && text.startsWith(createHead, from)) {
      exists = true;
      const parts = text.slice(from + createHead.length, e).split(' ');
      type = parts[0];
      for (let i = 1; i < parts.length; i += 2) createOptions.set(parts[i]!, parts[i + 1] ?? '');
    }
  }
  return { exists, type, createOptions, entries, odd };
}

export interface NftSetParsed {
  /** Canonical CIDR -> remaining seconds (undefined = permanent). Ranges are split into CIDRs. */
  readonly entries: Map<string, number | undefined>;
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
  const entries = new Map<string, number | undefined>();
  let nonCidr = 0;
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    throw new FirewallError(`cannot parse nft JSON output: ${String(err)}`, { cause: err });
  }
  const items = (doc as { nftables?: unknown }).nftables;
  if (!Array.isArray(items)) throw new FirewallError('nft JSON output has no "nftables" array');
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
      for (const c of cidrs) entries.set(c.text, remaining);
    }
  }
  return { entries, nonCidr };
}

/** Canonical CIDR texts, sorted by address then prefix (wider first). */
export function sortCidrTexts(texts: Iterable<string>): string[] {
  const cidrs: Cidr[] = [];
  for (const t of texts) {
    const c = toCidr(t);
    if (c) cidrs.push(c);
  }
  cidrs.sort(compareCidr);
  return cidrs.map((c) => c.text);
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
    if (line === '}') break;
    const m = /^([^\s,]+)(?: timeout (\d+)s)?,?$/.exec(line);
    const cidr = m ? toCidr(m[1]!) : undefined;
    if (cidr) out.set(cidr.text, m![2] === undefined ? undefined : Number(m![2]));
  }
  return out;
}
