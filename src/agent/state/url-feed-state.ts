import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { StateError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { UrlCache } from '../../feed/url-cache.js';
import type { DomainReason, DomainSkip } from '../../policy/domains.js';
import { writeFileAtomic } from '../../util/atomic-file.js';

export interface AppliedNames {
  ts: number;
  plugin: string;
  names: number;
  byReason: Record<DomainReason, number>;
}

/** The URL feed's own small state, beside the IPv4 feed's (`dns-state.json` in state_dir). */
export interface DnsSmallState {
  cursor?: number;
  lastFullPullAt?: number;
  /** The names in force at the resolver after the last successful apply. */
  applied?: AppliedNames;
  /** The same for the dry-run plugin, kept apart so a dry run never stands in for the resolver's state. */
  dryRunApplied?: AppliedNames;
  pendingShrink?: { at: number; size: number };
  /**
   * Names the resolver backend left alone in the last apply because someone else's data holds
   * them (unbound): all counted, the first ones with what holds them (explain, the log).
   */
  leftAlone?: { plugin: string; count: number; names: Record<string, string> };
  /** Selection numbers of the last cycle that selected (status, metrics). */
  lastSelection?: { ts: number; hosts: number; skipped: Record<DomainSkip, number>; addresses: number };
}

const STATE_FILE = 'dns-state.json';
const CACHE_FILE = 'url-cache.bin';
const MAGIC = 0x4c525557; // "WURL"
const VERSION = 1;
const HEADER = 32;

/**
 * url-cache.bin: a header of 8 u32 (magic, version, count, hosts, invalid, host text bytes,
 * 0, 0), then the columns hashHi, hashLo, hostOf, tsOf (u32[count]), scoreOf (f64[count]),
 * decisionOf (i8[count]), host kinds (u8[hosts]) and the host names joined by newlines
 * (names are validated DNS names or IPv4 addresses: never a newline). Host byte order.
 */
export class DnsStateStore {
  constructor(
    readonly dir: string,
    private readonly logger: Logger,
  ) {}

  private setAside(path: string, why: string): void {
    const aside = `${path}.corrupt-${Date.now()}`;
    this.logger.warn({ file: path, aside }, `${why}; set aside, starting fresh`);
    try {
      renameSync(path, aside);
    } catch {
      /* gone already */
    }
  }

  get small(): DnsSmallState {
    const path = join(this.dir, STATE_FILE);
    if (!existsSync(path)) return {};
    try {
      const v = JSON.parse(readFileSync(path, 'utf8')) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as DnsSmallState;
    } catch {
      /* set aside below */
    }
    this.setAside(path, `${STATE_FILE} unreadable`);
    return {};
  }

  update(patch: Partial<DnsSmallState>): void {
    try {
      writeFileAtomic(join(this.dir, STATE_FILE), JSON.stringify({ ...this.small, ...patch }));
    } catch (err) {
      throw new StateError(`cannot write ${STATE_FILE} in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
  }

  loadUrlCache(): UrlCache | undefined {
    const path = join(this.dir, CACHE_FILE);
    if (!existsSync(path)) return undefined;
    let buf: Uint8Array = readFileSync(path);
    if (buf.byteOffset % 8 !== 0) buf = new Uint8Array(buf);
    const h = buf.length >= HEADER ? new Uint32Array(buf.buffer, buf.byteOffset, 8) : undefined;
    const n = h?.[2] ?? 0;
    const hostCount = h?.[3] ?? 0;
    const textBytes = h?.[5] ?? 0;
    const size = HEADER + n * 25 + hostCount + textBytes;
    if (!h || h[0] !== MAGIC || h[1] !== VERSION || buf.length !== size) {
      this.setAside(path, `${CACHE_FILE} has an unknown format`);
      return undefined;
    }
    const b = buf.buffer;
    let o = buf.byteOffset + HEADER;
    const u32 = () => {
      const a = new Uint32Array(b, o, n);
      o += 4 * n;
      return a;
    };
    const hashHi = u32();
    const hashLo = u32();
    const hostOf = u32();
    const tsOf = u32();
    const scoreOf = new Float64Array(b, o, n);
    o += 8 * n;
    const decisionOf = new Int8Array(b, o, n);
    o += n;
    const kinds = new Uint8Array(b, o, hostCount);
    o += hostCount;
    const text = Buffer.from(b, o, textBytes).toString('latin1');
    const hosts = hostCount ? text.split('\n') : [];
    if (hosts.length !== hostCount) {
      this.setAside(path, `${CACHE_FILE} has an unknown format`);
      return undefined;
    }
    return UrlCache.fromColumns(hosts, kinds, { hashHi, hashLo, hostOf, tsOf, scoreOf, decisionOf }, h[4]!);
  }

  saveUrlCache(cache: UrlCache): void {
    const c = cache.columns();
    const text = Buffer.from(cache.hosts.join('\n'), 'latin1');
    const header = new Uint32Array([MAGIC, VERSION, cache.size, cache.hosts.length, cache.invalid, text.length, 0, 0]);
    const bytes = (a: Uint32Array | Uint8Array | Float64Array | Int8Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    try {
      writeFileAtomic(join(this.dir, CACHE_FILE), [bytes(header), bytes(c.hashHi), bytes(c.hashLo), bytes(c.hostOf), bytes(c.tsOf), bytes(c.scoreOf), bytes(c.decisionOf), bytes(cache.hostKindsView()), text]);
    } catch (err) {
      throw new StateError(`cannot write ${CACHE_FILE} in ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
  }
}
