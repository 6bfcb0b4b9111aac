/**
 * File look-ups (GET /files/{digest}). A digest is an MD5, SHA1 or SHA256 hex string (any case). The main
 * store "knows" a deterministic eighth of all digests; the deep scan (`deep=YES`) another
 * eighth; tests add records of their own (`addFile`). Records carry upper-case hex.
 */
import { hashString, mix32 } from './ipspace.js';

export const DIGEST = /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;
const TYPES = ['application/x-dosexec', 'application/x-executable', 'application/pdf', 'application/zip', 'application/vnd.ms-excel'];
const NAMES = ['invoice.exe', 'payload.elf', 'report.pdf', 'update.zip', 'salary.xls'];

export interface FileRecord {
  md5: string;
  sha1: string;
  sha256: string;
  score: number;
  ts: number;
  file_bytes: number | null;
  total_reports: number;
  total_members: number;
  file_type: string;
  file_name: string;
  tags: string[];
  idx_ts: string;
  idx_entry_ts: string;
  entry_ts: number;
}

export interface AddedFile {
  /** At least one digest. */
  md5?: string;
  sha1?: string;
  sha256?: string;
  score?: number;
  tags?: string[];
  /** Only found with deep=YES. */
  deep?: boolean;
}

function hexOf(seed: number, chars: number): string {
  let s = '';
  let x = seed;
  while (s.length < chars) {
    x = mix32(x + 0x9e3779b9);
    s += x.toString(16).padStart(8, '0');
  }
  return s.slice(0, chars).toUpperCase();
}

export class FileStore {
  private readonly added = new Map<string, { rec: FileRecord; deep: boolean }>();

  constructor(
    private readonly seed: number,
    private readonly now: () => number,
  ) {}

  private record(d: { md5?: string | undefined; sha1?: string | undefined; sha256?: string | undefined }, h: number, score: number, tags: string[]): FileRecord {
    const ts = this.now() - (h % (30 * 86_400));
    const iso = new Date(ts * 1000).toISOString();
    return {
      md5: d.md5?.toUpperCase() ?? hexOf(h ^ 1, 32),
      sha1: d.sha1?.toUpperCase() ?? hexOf(h ^ 2, 40),
      sha256: d.sha256?.toUpperCase() ?? hexOf(h ^ 3, 64),
      score,
      ts,
      file_bytes: h % 5 === 0 ? null : 1024 + (h % 5_000_000),
      total_reports: 1 + (h % 30),
      total_members: 1 + (h % 7),
      file_type: TYPES[h % TYPES.length]!,
      file_name: NAMES[h % NAMES.length]!,
      tags,
      idx_ts: iso,
      idx_entry_ts: iso,
      entry_ts: ts,
    };
  }

  add(f: AddedFile): FileRecord {
    const digests = [f.md5, f.sha1, f.sha256].filter((d): d is string => d !== undefined);
    if (!digests.length || !digests.every((d) => DIGEST.test(d))) throw new TypeError('addFile: give at least one valid md5/sha1/sha256 digest');
    const rec = this.record({ md5: f.md5, sha1: f.sha1, sha256: f.sha256 }, hashString(digests[0]!.toLowerCase()), f.score ?? 8, f.tags ?? ['malware']);
    for (const d of [rec.md5, rec.sha1, rec.sha256]) this.added.set(d, { rec, deep: f.deep ?? false });
    return rec;
  }

  /** The record for a valid digest, or undefined (404). */
  find(digest: string, deep: boolean): FileRecord | undefined {
    const up = digest.toUpperCase();
    const a = this.added.get(up);
    if (a) return a.deep && !deep ? undefined : a.rec;
    const h = mix32(hashString(digest.toLowerCase()) ^ this.seed);
    const bucket = h % 8;
    if (bucket !== 0 && !(deep && bucket === 1)) return undefined;
    const kind = up.length === 32 ? 'md5' : up.length === 40 ? 'sha1' : 'sha256';
    return this.record({ [kind]: up }, h, (100 + (h % 901)) / 100, bucket === 1 ? ['deep-scan'] : ['malware']);
  }
}
