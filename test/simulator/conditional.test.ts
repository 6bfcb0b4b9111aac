import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from './index.js';
import { authHeaders } from './test-helpers.js';

let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ indicators: 500, seed: 21, now: 1_795_000_000 });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.setConditional(null);
  sim.setNotModifiedQuirk(null);
  sim.clearRequests();
});

/** GET /ips?filter=2 with `limit` naming a URL of the test's own, and extra request headers. */
async function manual(limit: number, headers: Record<string, string> = {}): Promise<{ status: number; etag: string | null; encoding: string | null; body: string }> {
  const r = await fetch(`${sim.url}/ips?filter=2&limit=${limit}`, { headers: { ...authHeaders(sim), ...headers } });
  return { status: r.status, etag: r.headers.get('etag'), encoding: r.headers.get('content-encoding'), body: await r.text() };
}

describe('conditional answers', () => {
  it('etag: a changed answer gets a new tag; the old tag is answered 200 with the new answer, the new one 304', async () => {
    sim.setConditional('etag');
    const first = await manual(901);
    sim.setDecision('192.0.2.201', 1);
    const second = await manual(901, { 'if-none-match': first.etag! });
    expect(second.status).toBe(200);
    expect(second.etag).not.toBe(first.etag);
    expect(second.body).toContain('192.0.2.201');
    expect((await manual(901, { 'if-none-match': second.etag! })).status).toBe(304);
    expect(sim.requests.map((r) => r.validators)).toEqual([false, true, true]);
  });

  it("fixed-etag: the URL's first tag for ever; sent back it is answered 304 however the answer changed, and without it the answer of now comes", async () => {
    sim.setConditional('fixed-etag');
    const first = await manual(902);
    sim.setDecision('192.0.2.202', 1);
    const plain = await manual(902);
    expect(plain.status).toBe(200);
    expect(plain.body).toContain('192.0.2.202');
    expect(plain.etag).toBe(first.etag);
    const asked = await manual(902, { 'if-none-match': first.etag! });
    expect([asked.status, asked.body]).toEqual([304, '']);
  });

  it('gzip-label: a 304 says Content-Encoding: gzip and has no body; a 200 is as before', async () => {
    sim.setConditional('etag');
    sim.setNotModifiedQuirk('gzip-label');
    const first = await manual(903);
    expect(first.encoding).toBeNull();
    const again = await manual(903, { 'if-none-match': first.etag! });
    expect([again.status, again.encoding, again.body]).toEqual([304, 'gzip', '']);
  });

  it('unasked: a request with no validator is answered 304 when the answer has not changed since it was last served, 200 once it has', async () => {
    sim.setConditional('etag');
    sim.setNotModifiedQuirk('unasked');
    expect((await manual(904)).status).toBe(200);
    expect((await manual(904)).status).toBe(304);
    sim.setDecision('192.0.2.204', 1);
    expect((await manual(904)).status).toBe(200);
  });

  it('refuses an unknown mode or quirk', async () => {
    expect(() => sim.setConditional('sometimes' as never)).toThrow(TypeError);
    expect(() => sim.setNotModifiedQuirk('sometimes' as never)).toThrow(TypeError);
    await expect(startSimulator({ notModifiedQuirk: 'sometimes' as never })).rejects.toThrow(TypeError);
  });
});
