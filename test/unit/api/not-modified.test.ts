// Conditional requests and 304s against the real simulator over loopback, including the ways a
// cache in front of the API gets them wrong: a tag that never changes, a 304 labelled gzip, a 304
// to a request that sent no validator. What the agent relies on: a full pull is never answered
// from a kept answer, a 304 is "unchanged" only when an answer is kept, and a 304's Date stands
// for the server's clock of the kept page.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../../src/api/client.js';
import type { ThreatIntelApi } from '../../../src/api/threat-intel.js';
import { testApi } from '../../helpers/api-client.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';

let sim: Simulator;
const clients: ApiClient[] = [];
const closing: Simulator[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 11 });
});
afterAll(async () => {
  await sim?.close();
});
beforeEach(() => {
  sim.setConditional(null);
  sim.setNotModifiedQuirk(null);
  sim.clearRequests();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(closing.splice(0).map((s) => s.close()));
});

function api(on: Simulator = sim): ThreatIntelApi {
  return testApi(clients, { baseUrl: on.url, token: on.token });
}

const ipsStatuses = (on: Simulator = sim) => on.requests.filter((r) => r.path.endsWith('/ips')).map((r) => r.status);
const ips = (page: { body: { ip: string }[] }) => page.body.map((i) => i.ip);
const MANUAL = 2;

describe('a cache whose tag never changes (fixed-etag)', () => {
  it('a full pull sends no validator, so it gets the answer of now; a poll that sends one gets the answer kept, old as it is', async () => {
    sim.setConditional('fixed-etag');
    const a = api();
    const polled = await a.feedPage(MANUAL, 0, 1000, { conditional: true });
    sim.setDecision('192.0.2.31', 1);
    const full = await a.feedPage(MANUAL, 0, 1000);
    expect(ips(full)).toContain('192.0.2.31');
    expect(ips(full)).toHaveLength(ips(polled).length + 1);
    // Asked with the kept answer's validator (as a poll does), this cache says 304 however much
    // the answer changed: the poll gets the kept answer; the next cycle's full pull corrects it.
    const again = await a.feedPage(MANUAL, 0, 1000, { conditional: true });
    expect(ipsStatuses()).toEqual([200, 200, 304]);
    expect(ips(again)).toEqual(ips(polled));
  });
});

describe('a 304 with any headers', () => {
  it('labelled Content-Encoding: gzip, it is still "unchanged": the kept page, for a decision feed and for the agent record', async () => {
    sim.setConditional('etag');
    sim.setNotModifiedQuirk('gzip-label');
    const a = api();
    const first = await a.feedPage(MANUAL, 0, 1000, { conditional: true });
    const again = await a.feedPage(MANUAL, 0, 1000, { conditional: true });
    expect(ips(again)).toEqual(ips(first));
    expect(ipsStatuses()).toEqual([200, 304]);
    const record = await a.agent(sim.agid);
    expect(await a.agent(sim.agid)).toEqual(record);
    expect(sim.requests.filter((r) => r.path.endsWith('/feedback')).map((r) => r.status)).toEqual([200, 304]);
  });

  it('with no answer kept, it is a clear error naming the route and what happened, not "HTTP 304"', async () => {
    sim.setConditional('etag');
    sim.setNotModifiedQuirk('unasked');
    // A URL no other test asked for (limit 999): this cache has served it once, to the first client.
    await api().feedPage(MANUAL, 0, 999);
    // A second client has kept nothing and sends no validator; this cache answers 304 all the same.
    const err = await api()
      .feedPage(MANUAL, 0, 999)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WCF_ERR_API_RESPONSE' });
    expect((err as Error).message).toMatch(/^GET \/ips: the server answered 304 Not Modified, but no earlier answer is kept to stand for it \(this request sent no validator\)/);
    expect(ipsStatuses().slice(0, 2)).toEqual([200, 304]);
    // The same for a call that may send validators but has none kept for this URL.
    const conditional = await api()
      .feedPage(MANUAL, 0, 999, { conditional: true })
      .catch((e: unknown) => e);
    expect(conditional).toMatchObject({ code: 'WCF_ERR_API_RESPONSE', message: (err as Error).message });
  });
});

describe('the agent record', () => {
  it('asked again unchanged: 304 and the kept record; changed on the server: the new record', async () => {
    sim.setConditional('etag');
    const a = api();
    const record = await a.agent(sim.agid);
    expect(await a.agent(sim.agid)).toEqual(record);
    sim.setAgentConfig(sim.agid, { sync_time: '7' });
    const changed = await a.agent(sim.agid);
    expect(changed?.config).toMatchObject({ sync_time: '7' });
    expect(sim.requests.filter((r) => r.path.endsWith('/feedback')).map((r) => r.status)).toEqual([200, 304, 200]);
  });
});

describe("a 304's Date", () => {
  it("stands for the server's clock of the kept page (its header ts), not the clock of when the page was kept", async () => {
    // The simulator's clock is stopped an hour back: its pages say so; the 304's Date is the real time.
    const past = Math.floor(Date.now() / 1000) - 3600;
    const frozen = await startSimulator({ indicators: 200, seed: 12, now: past, conditional: 'etag' });
    closing.push(frozen);
    const a = api(frozen);
    const first = await a.feedPage(MANUAL, 0, 1000, { conditional: true });
    expect(first.header.ts).toBe(String(past));
    const from = Math.floor(Date.now() / 1000);
    const again = await a.feedPage(MANUAL, 0, 1000, { conditional: true });
    const to = Math.floor(Date.now() / 1000);
    expect(ipsStatuses(frozen)).toEqual([200, 304]);
    expect(Number(again.header.ts)).toBeGreaterThanOrEqual(from);
    expect(Number(again.header.ts)).toBeLessThanOrEqual(to);
    expect(ips(again)).toEqual(ips(first));
  });
});
