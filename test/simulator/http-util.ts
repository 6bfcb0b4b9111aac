/** Small node:http helpers: JSON answers, bounded body reading, cancellable waits. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';

export const MAX_BODY_BYTES = 1 << 20;

/**
 * Sends a body; `ascii` (caller guarantees pure ASCII) encodes with a plain copy. `gzip`: the
 * request accepts it and the simulator compresses (bodies from 1 KiB, as servers commonly do).
 */
export function send(res: ServerResponse, status: number, body: string, contentType = 'application/json', ascii = false, extra: Record<string, string> = {}, gzip = false): void {
  if (res.headersSent || res.destroyed) return;
  let buf = Buffer.from(body, ascii ? 'latin1' : 'utf8');
  const headers: Record<string, string | number> = { ...extra };
  if (gzip && buf.length >= 1024) {
    buf = gzipSync(buf, { level: 6 });
    headers['content-encoding'] = 'gzip';
    headers.vary = 'accept-encoding';
  }
  headers['content-length'] = buf.length;
  if (buf.length) headers['content-type'] = contentType;
  res.writeHead(status, headers);
  res.end(buf);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value));
}

export function sendMessage(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { message });
}

export type BodyResult = { ok: true; value: unknown } | { ok: false; status: number; message: string };

/** Whether a request's Accept-Encoding takes gzip (a `q=0` refuses it). */
export function acceptsGzip(req: IncomingMessage): boolean {
  return (req.headers['accept-encoding'] ?? '').split(',').some((c) => {
    const [name, ...params] = c.trim().toLowerCase().split(';');
    return (name === 'gzip' || name === '*') && !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
  });
}

/**
 * Reads a JSON request body (empty body = undefined). `maxBytes` bounds the bytes on the wire,
 * as a proxy's body limit does. A gzip-encoded body is taken when `gzip` (the simulator
 * advertises it), decoded within 64 MiB; otherwise, or for any other coding, 415.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes = MAX_BODY_BYTES, gzip = false): Promise<BodyResult> {
  const coding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) tooLarge = true;
    else chunks.push(chunk);
  }
  if (tooLarge) return { ok: false, status: 413, message: `body: larger than ${maxBytes === MAX_BODY_BYTES ? '1 MiB' : `${maxBytes} bytes`}` };
  let raw = Buffer.concat(chunks);
  if (coding !== 'identity') {
    if (coding !== 'gzip' || !gzip) return { ok: false, status: 415, message: `content-encoding: ${coding} is not taken` };
    try {
      raw = gunzipSync(raw, { maxOutputLength: 64 * 1024 * 1024 });
    } catch {
      return { ok: false, status: 400, message: 'body: invalid gzip' };
    }
  }
  const text = raw.toString('utf8');
  if (text.trim() === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, status: 400, message: 'body: invalid JSON' };
  }
}

/**
 * Waits ms unless the response closes first or cancelAll() runs (server shutdown).
 * Resolves true when the full delay elapsed.
 */
export class Waiter {
  private readonly pending = new Set<() => void>();

  wait(ms: number, res: ServerResponse): Promise<boolean> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.pending.delete(cancel);
        res.off('close', cancel);
        resolve(ok);
      };
      const cancel = (): void => done(false);
      timer = setTimeout(() => done(true), ms);
      this.pending.add(cancel);
      res.on('close', cancel);
    });
  }

  cancelAll(): void {
    for (const c of [...this.pending]) c();
  }
}

/** Writes a chunk honouring back-pressure; false when the response is gone. */
export function writeChunk(res: ServerResponse, chunk: string): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onDrain = (): void => {
      res.off('close', onClose);
      resolve(true);
    };
    const onClose = (): void => {
      res.off('drain', onDrain);
      resolve(false);
    };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}
