// The simulator's optional compression, as nginx's `gzip on` plus a body-decoding backend would
// offer it: gzip answers from 1 KiB when asked, gzip request bodies taken and advertised; off,
// a gzip body is refused with 415 and answers are plain.
import { request } from 'node:http';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from './index.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 500, seed: 2 });
});
afterAll(async () => {
  await sim?.close();
});

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request with exactly these headers (fetch would add and decode encodings itself). */
function raw(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(sim.url + path, { method, headers: { authorization: `Bearer ${sim.token}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const report = Buffer.from(JSON.stringify({ agid: 'agent-1', hostanme: 'h', plugin: 'dry-run', code: 0, maximum_rules: 9, score_threshold: 1, sync_time: '15', ts: 7, version: '1', blacklist: Array.from({ length: 200 }, (_, i) => `10.0.${i}.0/24`) }));

describe('simulator compression', () => {
  it('off (the default): plain answers, no Accept-Encoding advertised, a gzip body refused with 415', async () => {
    sim.setCompression(false);
    const page = await raw('GET', '/ips?filter=0&ts=0&limit=100', { 'accept-encoding': 'gzip' });
    expect(page.headers['content-encoding']).toBeUndefined();
    expect(page.headers['accept-encoding']).toBeUndefined();
    expect(JSON.parse(page.body.toString())).toMatchObject({ body: expect.any(Array) });
    const post = await raw('POST', '/feedback?agid=agent-1', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync(report));
    expect(post.status).toBe(415);
  });

  it('on: a gzip answer when asked, plain when not; Accept-Encoding advertised; a gzip report stored as sent', async () => {
    sim.setCompression(true);
    const zipped = await raw('GET', '/ips?filter=0&ts=0&limit=100', { 'accept-encoding': 'gzip' });
    const plain = await raw('GET', '/ips?filter=0&ts=0&limit=100', {});
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(zipped.headers['accept-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(zipped.body).toString()).body).toEqual(JSON.parse(plain.body.toString()).body);
    expect(zipped.body.length * 3).toBeLessThan(plain.body.length);
    const post = await raw('POST', '/feedback?agid=agent-1', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync(report));
    expect(post.status).toBe(200);
    const record = JSON.parse((await raw('GET', '/feedback?agid=agent-1', {})).body.toString()) as { ts: number; blacklist: string[] }[];
    expect(record[0]).toMatchObject({ ts: 7, blacklist: JSON.parse(report.toString()).blacklist });
    const broken = await raw('POST', '/feedback?agid=agent-1', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, report);
    expect(broken.status).toBe(400);
    sim.setCompression(false);
  });
});
