/**
 * Optional conditional answers (off by default, as the vendor's spec shows none): `ETag`,
 * `Last-Modified` or both on `GET /ips` and `GET /feedback?agid=`, and 304 with no body when
 * the request's `If-None-Match` / `If-Modified-Since` still matches. The tag is a hash of the
 * answer without the header's `ts` (the page's own clock, which changes every second);
 * Last-Modified is when that answer (per URL) last changed, on the simulator's clock, moved on
 * by at least a second at each change so a change within one second is never hidden.
 *
 * Two ways a cache in front of an API gets this wrong, for the agent's tests:
 * - mode `fixed-etag`: each URL keeps the tag of its first answer for ever, whatever the answer
 *   says later, so a request that sends it back is answered 304 however much the answer changed
 *   (a cache that never revalidates); a request without it still gets the answer of now.
 * - quirk `gzip-label`: every 304 carries `Content-Encoding: gzip` (and `Vary`), as a proxy that
 *   copies the stored answer's headers onto its 304 does; `unasked`: a 304 also to a request that
 *   sent no validator at all, when the URL's answer has not changed since it was last served (a
 *   cache answering as if for another client).
 *
 * Also the byte count of every API call, read from the socket's counters: requests on one
 * keep-alive connection follow each other, so the counters' growth between two answers is
 * exactly one request and its answer (headers included).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type ConditionalMode = 'etag' | 'last-modified' | 'both' | 'fixed-etag';
export const CONDITIONAL_MODES: readonly ConditionalMode[] = ['etag', 'last-modified', 'both', 'fixed-etag'];
export type NotModifiedQuirk = 'gzip-label' | 'unasked';
export const NOT_MODIFIED_QUIRKS: readonly NotModifiedQuirk[] = ['gzip-label', 'unasked'];

interface Version {
  hash: string;
  since: number;
  /** The hash of the URL's first answer: the `fixed-etag` mode's tag. */
  first: string;
}

/** The header `ts` of a feed page is the first `"ts":"` (items carry `"ts":` numbers). */
const HEADER_TS = /"ts":"\d*"/;

export class Conditional {
  private readonly versions = new Map<string, Version>();
  mode: ConditionalMode | null;
  quirk: NotModifiedQuirk | null;

  constructor(mode: ConditionalMode | null = null, quirk: NotModifiedQuirk | null = null) {
    this.mode = mode;
    this.quirk = quirk;
  }

  /**
   * The validators for an answer to `key` (path and query), and whether the request's
   * conditions still hold (then the answer is a 304). `now`: the simulator's clock, epoch s.
   */
  check(key: string, body: string, req: IncomingMessage, now: number): { headers: Record<string, string>; notModified: boolean } | undefined {
    const mode = this.mode;
    if (!mode) return undefined;
    const hash = createHash('sha1').update(body.replace(HEADER_TS, '')).digest('hex').slice(0, 24);
    const was = this.versions.get(key);
    const changed = !was || was.hash !== hash;
    let v = was;
    if (!v || changed) {
      if (this.versions.size > 100_000) this.versions.clear();
      v = { hash, since: Math.max(now, (was?.since ?? 0) + 1), first: was?.first ?? hash };
      this.versions.set(key, v);
    }
    const etag = `"${mode === 'fixed-etag' ? v.first : v.hash}"`;
    const lastModified = new Date(v.since * 1000).toUTCString();
    const headers: Record<string, string> = {};
    if (mode !== 'last-modified') headers.etag = etag;
    if (mode === 'last-modified' || mode === 'both') headers['last-modified'] = lastModified;
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    let notModified = false;
    // As a server does: If-None-Match decides when sent, If-Modified-Since only without it.
    if (inm !== undefined && headers.etag) notModified = inm.split(',').some((t) => t.trim() === etag || t.trim() === '*');
    else if (ims !== undefined && headers['last-modified']) {
      const at = Date.parse(ims);
      notModified = Number.isFinite(at) && Math.floor(at / 1000) >= v.since;
    } else if (inm === undefined && ims === undefined && this.quirk === 'unasked') notModified = !changed;
    if (notModified && this.quirk === 'gzip-label') return { headers: { ...headers, 'content-encoding': 'gzip', vary: 'accept-encoding' }, notModified };
    return { headers, notModified };
  }
}

/** Bytes of one call: what the socket read and wrote since the last answer on it. */
export function countBytes(req: IncomingMessage, res: ServerResponse, done: (bytesIn: number, bytesOut: number) => void): void {
  const sock = req.socket as Socket & { simRead?: number; simWritten?: number };
  res.once('finish', () => {
    const read = sock.bytesRead;
    const written = sock.bytesWritten;
    const bytesIn = read - (sock.simRead ?? 0);
    const bytesOut = written - (sock.simWritten ?? 0);
    sock.simRead = read;
    sock.simWritten = written;
    done(bytesIn, bytesOut);
  });
}
