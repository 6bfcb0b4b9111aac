import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from './index.js';
import { authHeaders, getJson, type FeedPageWire } from './test-helpers.js';

const NOW = 1_795_000_000;
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ indicators: 3000, seed: 21, now: NOW });
});
afterAll(() => sim.close());
beforeEach(() => sim.setFault(null));

const ips = (q = 'limit=10'): Promise<Response> => fetch(`${sim.url}/ips?${q}`, { headers: authHeaders(sim) });

describe('fault modes', () => {
  it('http500 answers 500 JSON; count clears the fault after N requests', async () => {
    sim.setFault('http500', { count: 2 });
    for (const status of [500, 500, 200, 200]) {
      const r = await ips();
      expect(r.status).toBe(status);
      if (status === 500) expect(await r.json()).toHaveProperty('message');
      else await r.text();
    }
  });

  it('routes filter limits the fault; /version is never faulted', async () => {
    sim.setFault('http500', { routes: ['GET /feedback'] });
    expect((await ips()).status).toBe(200);
    expect((await getJson(sim, '/feedback')).status).toBe(500);
    expect((await fetch(`${sim.url}/version`)).status).toBe(200);
    sim.setFault('http500', { routes: ['/ips'] });
    expect((await ips()).status).toBe(500);
    expect((await getJson(sim, '/feedback')).status).toBe(200);
  });

  it('slow exceeds a client timeout without blocking other requests', async () => {
    sim.setFault('slow', { delayMs: 60_000, routes: ['GET /ips'] });
    const slow = fetch(`${sim.url}/ips?limit=1`, { headers: authHeaders(sim), signal: AbortSignal.timeout(300) });
    const other = await getJson(sim, '/feedback');
    expect(other.status).toBe(200);
    await expect(slow).rejects.toMatchObject({ name: 'TimeoutError' });
    sim.setFault('slow', { delayMs: 1 });
    const r = await ips('limit=2');
    expect(r.status).toBe(200);
    expect(((await r.json()) as FeedPageWire).body).toHaveLength(2);
  });

  it('truncated: a valid start of the JSON that does not parse (end) or a dropped connection (destroy)', async () => {
    sim.setFault('truncated', { count: 1 });
    const r = await ips('limit=50');
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text.startsWith('{"header":{')).toBe(true);
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
    sim.setFault('truncated', { truncate: 'destroy', count: 1 });
    const r2 = await ips('limit=50');
    await expect(r2.text()).rejects.toThrow();
    expect((await ips()).status).toBe(200);
  });

  it('wrongTypes: strings for numbers, an object for the body, objects for config values', async () => {
    sim.setFault('wrongTypes');
    const p = (await (await ips('limit=3')).json()) as { body: Record<string, unknown>[] };
    for (const it of p.body) {
      expect(typeof it.score).toBe('string');
      expect(typeof it.ts).toBe('string');
    }
    const agents = await getJson<{ config: Record<string, unknown> }[]>(sim, '/feedback');
    expect(typeof agents.body[0]!.config.maximum_rules).toBe('object');
    sim.setFault('wrongTypes', { wrongTypes: 'body' });
    const p2 = (await (await ips('limit=3')).json()) as { body: unknown };
    expect(Array.isArray(p2.body)).toBe(false);
    expect(typeof p2.body).toBe('object');
  });

  it('oversized: more items than limit, or a huge streamed body', async () => {
    sim.setFault('oversized', { count: 1 });
    const p = (await (await ips('limit=20')).json()) as FeedPageWire;
    expect(p.body.length).toBeGreaterThan(20);
    expect(p.header.page_size).toBe(20);
    sim.setFault('oversized', { oversize: 'bytes', sizeBytes: 4 * 1024 * 1024, count: 1 });
    const big = await (await ips('limit=5')).text();
    expect(big.length).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect((JSON.parse(big) as FeedPageWire).body.length).toBeGreaterThan(1000);
    // default 64 MiB: the client gives up after the first chunks; the server stops streaming
    sim.setFault('oversized', { oversize: 'bytes', count: 1 });
    const { body } = await request(`${sim.url}/ips?limit=5`, { headers: authHeaders(sim) });
    let got = 0;
    for await (const chunk of body) {
      got += (chunk as Buffer).length;
      if (got > 1024 * 1024) break;
    }
    expect(got).toBeGreaterThan(1024 * 1024);
    expect((await ips()).status).toBe(200);
    sim.setFault('oversized', { oversize: 'bytes', sizeBytes: 1024 * 1024, routes: ['GET /feedback'], count: 1 });
    const agents = await getJson<unknown[]>(sim, '/feedback');
    expect(agents.body.length).toBeGreaterThan(1000);
  });

  it('unauthorized flips to 401 after afterRequests requests', async () => {
    sim.setFault('unauthorized', { afterRequests: 2 });
    const statuses: number[] = [];
    for (let k = 0; k < 4; k++) {
      const r = await ips();
      statuses.push(r.status);
      await r.text();
    }
    expect(statuses).toEqual([200, 200, 401, 401]);
  });

  it('formulaCode publishes code in eval and exec_python', async () => {
    sim.setFault('formulaCode');
    let h = ((await (await ips()).json()) as FeedPageWire).header;
    expect(h.eval).toBe('process.exit(1)');
    expect(h.exec_python).toBe("__import__('os').system('touch /tmp/pwned')");
    sim.setFault('formulaCode', { formula: 'exec' });
    h = ((await (await ips()).json()) as FeedPageWire).header;
    expect(h.eval).toBe("require('child_process').execSync('touch /tmp/pwned')");
    sim.setFault('formulaCode', { formula: { eval: 'scoreTimeZero * 2', exec_python: 'scoreTimeZero * 2' } });
    h = ((await (await ips()).json()) as FeedPageWire).header;
    expect(h.eval).toBe('scoreTimeZero * 2');
  });

  it('reset destroys the socket without an answer', async () => {
    sim.setFault('reset', { count: 1 });
    await expect(ips()).rejects.toThrow(TypeError);
    expect(sim.requests.at(-1)!.status).toBe(0);
    expect((await ips()).status).toBe(200);
  });

  it('empty answers an empty body array', async () => {
    sim.setFault('empty');
    const p = (await (await ips()).json()) as FeedPageWire;
    expect(p.body).toEqual([]);
    expect(p.header.type).toBe('ipv4');
  });

  it('badJson answers a body that is not JSON', async () => {
    sim.setFault('badJson');
    const r = await ips();
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const text = await r.text();
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
  });

  it('skipRequests lets the first N matching requests through (a failure half-way through paging)', async () => {
    sim.setFault('http500', { routes: ['GET /ips'], skipRequests: 2, count: 1 });
    const statuses: number[] = [];
    // Requests on other routes neither fail nor count.
    expect((await getJson(sim, '/feedback')).status).toBe(200);
    for (let k = 0; k < 4; k++) {
      const r = await ips();
      statuses.push(r.status);
      await r.text();
    }
    expect(statuses).toEqual([200, 200, 500, 200]);
    // Works with the body-rewriting modes too, and a new setFault starts counting again.
    sim.setFault('truncated', { skipRequests: 1, count: 1 });
    const first = await (await ips()).text();
    expect(() => JSON.parse(first)).not.toThrow();
    const second = await (await ips()).text();
    expect(() => JSON.parse(second)).toThrow(SyntaxError);
    const third = await (await ips()).text(); // count 1: cleared
    expect(() => JSON.parse(third)).not.toThrow();
  });

  it('filter limits a fault to one feed (the agent pulls its feeds at the same time)', async () => {
    sim.setFault('http500', { routes: ['GET /ips'], filter: 2, skipRequests: 1 });
    const status = async (filter: number) => {
      const r = await getJson(sim, `/ips?limit=10&filter=${filter}&ts=0&full=no`);
      return r.status;
    };
    expect([await status(0), await status(2), await status(3), await status(0), await status(2)]).toEqual([200, 200, 200, 200, 500]);
  });

  it('rejects unknown modes and bad counts', () => {
    expect(() => sim.setFault('nope' as never)).toThrow(/unknown fault mode/);
    expect(() => sim.setFault('http500', { count: 0 })).toThrow(RangeError);
    expect(() => sim.setFault('http500', { skipRequests: -1 })).toThrow(RangeError);
    expect(() => sim.setFault('http500', { skipRequests: 1.5 })).toThrow(RangeError);
  });
});
