import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { UrlApi } from '../../api/url-api.js';
import { URL_TAGS, type FileRecord } from '../../api/wire.js';
import { EXIT_FILE_MALICIOUS, UsageError } from '../../errors.js';
import { createApi, loadContext, type GlobalOptions } from '../context.js';
import { isoTime, printJson } from '../format.js';
import { terminalSafe } from '../../util/terminal-text.js';

const DIGEST = /^(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64})$/i;

/** SHA-256 of a file, streamed (a large binary is never read into memory). */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** DIGEST (MD5/SHA1/SHA256 hex) as given, or PATH hashed with SHA-256. */
export async function resolveDigest(arg: string): Promise<{ digest: string; path?: string }> {
  const v = arg.trim();
  let isFile = false;
  try {
    isFile = statSync(v).isFile();
  } catch {
    /* not a path: maybe a digest */
  }
  if (isFile) {
    try {
      return { digest: await sha256File(v), path: v };
    } catch (err) {
      throw new UsageError(`PATH: cannot read ${v}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (DIGEST.test(v)) return { digest: v.toLowerCase() };
  throw new UsageError(`DIGEST|PATH: ${JSON.stringify(terminalSafe(v, 80))} is neither an MD5/SHA1/SHA256 hex digest nor a readable file`);
}

/** Malicious unless the platform whitelisted it: the file store holds indicators of malicious files. */
export function verdictOf(rec: FileRecord | null): 'unknown' | 'clean' | 'malicious' {
  if (!rec) return 'unknown';
  return rec.tags?.includes(URL_TAGS.whitelisted) ? 'clean' : 'malicious';
}

/** `file DIGEST|PATH [--deep] [--json]`: GET /files/{digest}. Exit 0 unknown or clean, 5 known malicious. */
export async function fileCommand(arg: string, opts: GlobalOptions & { deep?: boolean; json?: boolean }): Promise<number> {
  const { digest, path } = await resolveDigest(arg);
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = new UrlApi(createApi(config, logger).client);
  let rec: FileRecord | null;
  try {
    rec = await api.file(digest, Boolean(opts.deep));
  } finally {
    await api.client.close();
  }
  const verdict = verdictOf(rec);
  if (opts.json) {
    await printJson({ digest, path: path ?? null, deep: Boolean(opts.deep), verdict, record: rec });
  } else {
    const what = path ? `${terminalSafe(path, 200)} (sha256 ${digest})` : digest;
    if (!rec) process.stdout.write(`${what}: unknown to the platform${opts.deep ? '' : ' (try --deep for the wider search)'}\n`);
    else {
      process.stdout.write(
        `${what}: ${verdict === 'malicious' ? 'KNOWN MALICIOUS' : 'known, whitelisted'}\n` +
          `  score ${rec.score ?? '-'}, type ${terminalSafe(rec.file_type ?? '-', 60)}, name ${terminalSafe(rec.file_name ?? '-', 80)}, ` +
          `tags ${terminalSafe((rec.tags ?? []).join(',') || '-', 80)}, reports ${rec.total_reports ?? '-'}, last seen ${isoTime(rec.ts)}\n`,
      );
    }
  }
  return verdict === 'malicious' ? EXIT_FILE_MALICIOUS : 0;
}
