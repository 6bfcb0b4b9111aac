import { gzipSync, createGunzip } from 'node:zlib';
import { isAscii } from 'node:buffer';
import type { Readable } from 'node:stream';
import { ApiResponseError, ApiUnreachableError } from '../errors.js';
import { escapeControls } from '../util/terminal-text.js';
import type { RequestDeadline } from './deadline.js';
import { describeNetworkError } from './failures.js';
import type { TransportResponse } from './http.js';

/**
 * Compression on the wire, where the server offers it; a server that offers none is
 * answered exactly as before. A fleet's idle hosts spend most of their bytes on a few large,
 * repetitive JSON answers (the decision feeds, the agent record) and on the state report, which
 * gzip makes several times smaller.
 *
 * - Answers: every request says `Accept-Encoding: gzip`; a gzip answer is decoded as it
 *   arrives, and `max_response_mb` bounds the decoded bytes (a small answer that inflates
 *   without end is refused at the limit, never held whole). The rate limit counts wire bytes.
 * - The state report: sent gzip-encoded only once the server has said it takes gzip request
 *   bodies (an `Accept-Encoding` header in its answers, RFC 7694); a 415 to a compressed body
 *   sends it again plain and stops compressing for this client.
 */

/** What every request accepts. gzip alone: every server and proxy that compresses knows it. */
export const ACCEPT_ENCODING = 'gzip';

/** Request bodies below this are sent plain: the gzip header and the CPU are not worth it. */
const COMPRESS_FROM_BYTES = 1024;

/** Whether an answer's headers say the server takes gzip request bodies (RFC 7694). */
export function takesGzipBodies(headers: TransportResponse['headers']): boolean {
  const v = headers['accept-encoding'];
  const text = Array.isArray(v) ? v.join(',') : (v ?? '');
  return text.split(',').some((c) => {
    const [name, ...params] = c.trim().toLowerCase().split(';');
    return name === 'gzip' && !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
  });
}

/** A request body as it goes on the wire: gzip when the server takes it and it is worth it. */
export function encodeBody(body: string | Uint8Array, gzip: boolean): { body: string | Uint8Array; encoding?: 'gzip' } {
  const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  if (!gzip || bytes < COMPRESS_FROM_BYTES) return { body };
  return { body: gzipSync(body, { level: 6 }), encoding: 'gzip' };
}

/**
 * The decoded text of an answer, read to its end within `max` decoded bytes. A
 * `Content-Encoding` other than gzip (or identity) is refused, naming it: the agent cannot
 * read it and must not guess. A gzip stream that is damaged or cut short is a garbled answer
 * (retried like one); a connection lost midway is a network error.
 */
export async function readBody(res: TransportResponse, where: string, max: number, deadline: RequestDeadline): Promise<string> {
  // A 304 or 204 has no body, whatever its headers say: a cache may copy the stored answer's
  // Content-Encoding and Content-Length onto its 304, and there is nothing to decode or bound.
  const bodiless = res.statusCode === 304 || res.statusCode === 204;
  const coding = bodiless ? 'identity' : contentCoding(res.headers['content-encoding'], where, res.body);
  const declared = bodiless ? NaN : Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) {
    res.body.destroy();
    throw new ApiResponseError(`${where}: response of ${declared} bytes exceeds max_response_mb`);
  }
  let wire = 0;
  const source: Readable = coding === 'gzip' ? gunzipped(res.body, (n) => (deadline.received = wire += n)) : res.body;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of source) {
      size += (chunk as Buffer).length;
      if (coding !== 'gzip') deadline.received = size;
      if (size > max) {
        res.body.destroy();
        source.destroy();
        throw new ApiResponseError(`${where}: response exceeds max_response_mb (${Math.round(max / 1048576)} MiB${coding === 'gzip' ? ' decoded' : ''})`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof ApiResponseError) throw err;
    if (isZlibError(err)) throw new ApiResponseError(`${where}: the gzip-encoded answer is damaged or cut short (${escapeControls(describeNetworkError(err))})`, { cause: err, retryable: true });
    throw new ApiUnreachableError(`${where}: connection lost while reading the response: ${describeNetworkError(err)}`, { cause: err });
  }
  const buf = Buffer.concat(chunks, size);
  // Feed pages are ASCII; for ASCII, latin1 decoding gives the same string several times faster.
  return isAscii(buf) ? buf.toString('latin1') : buf.toString('utf8');
}

function contentCoding(header: string | string[] | undefined, where: string, body: Readable): 'identity' | 'gzip' {
  const raw = (Array.isArray(header) ? header.join(',') : (header ?? '')).trim();
  const v = raw.toLowerCase();
  if (v === '' || v === 'identity') return 'identity';
  if (v === 'gzip' || v === 'x-gzip') return 'gzip';
  body.destroy();
  throw new ApiResponseError(`${where}: the answer's Content-Encoding "${escapeControls(raw.slice(0, 40))}" is not one the agent asked for (gzip)`);
}

/** The body through gunzip; `onWire` hears each compressed chunk's size (for the rate limit). */
function gunzipped(body: Readable, onWire: (bytes: number) => void): Readable {
  const gunzip = createGunzip();
  body.on('data', (c: Buffer) => onWire(c.length));
  body.on('error', (err) => gunzip.destroy(err));
  // Left early (a limit, an abort): the connection goes too. A body read to its end is kept alive.
  gunzip.on('close', () => {
    if (!body.readableEnded) body.destroy();
  });
  body.pipe(gunzip);
  return gunzip;
}

function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}
