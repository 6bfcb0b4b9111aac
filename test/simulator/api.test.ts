import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from './index.js';
import { getJson, sampleReport, send, type FeedPageWire } from './test-helpers.js';

const NOW = 1_795_000_000;
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ indicators: 2000, seed: 11, now: NOW, agentConfig: { maximum_rules: 500, score_threshold: '6' } });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.setFault(null);
  sim.setDeletedAgentResponse('404');
});

describe('auth and routing', () => {
  it('GET /version needs no token', async () => {
    const r = await fetch(`${sim.url}/version`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ version: '4.18.0', name: 'wcf-simulator' });
  });

  it('401 without a token, 403 with a wrong one, Bearer and bare both accepted', async () => {
    const url = `${sim.url}/ips?limit=1`;
    let r = await fetch(url);
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ message: 'missing token' });
    r = await fetch(url, { headers: { authorization: 'Bearer ' } });
    expect(r.status).toBe(401);
    r = await fetch(url, { headers: { authorization: 'Bearer nope' } });
    expect(r.status).toBe(403);
    r = await fetch(url, { headers: { authorization: 'nope' } });
    expect(r.status).toBe(403);
    r = await fetch(url, { headers: { authorization: `Bearer ${sim.token}` } });
    expect(r.status).toBe(200);
    r = await fetch(url, { headers: { authorization: sim.token } });
    expect(r.status).toBe(200);
    r = await fetch(`${sim.origin}/_sim/stats`);
    expect(r.status).toBe(401);
  });

  it('unknown routes answer 404 JSON', async () => {
    for (const p of ['/nope', '/ips/1', '/files', '/urls/x/y']) {
      const r = await fetch(sim.url + p, { headers: { authorization: sim.token } });
      expect(r.status).toBe(404);
      expect(await r.json()).toHaveProperty('message');
    }
    expect((await fetch(`${sim.origin}/other`)).status).toBe(404);
    expect((await send(sim, 'PUT', '/ips')).status).toBe(404);
  });

  it('records API requests for tests', async () => {
    sim.clearRequests();
    await getJson(sim, '/ips?limit=5&filter=2');
    expect(sim.requests).toEqual([{ method: 'GET', path: '/api/v1/ips', query: { limit: '5', filter: '2' }, at: NOW, status: 200, validators: false }]);
  });
});

describe('GET /ips validation', () => {
  it.each([
    ['limit=0', 'limit'],
    ['limit=1001', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=', 'limit'],
    ['limit=1.5', 'limit'],
    ['filter=4', 'filter'],
    ['filter=-1', 'filter'],
    ['ts=-1', 'ts'],
    ['ts=1e3', 'ts'],
    ['full=maybe', 'full'],
  ])('%s -> 400 naming %s', async (q, field) => {
    const r = await getJson<{ message: string }>(sim, `/ips?${q}`);
    expect(r.status).toBe(400);
    expect(r.body.message.startsWith(`${field}: `)).toBe(true);
  });

  it('answers a header with every spec field and full=yes items with every field', async () => {
    const r = await getJson<FeedPageWire>(sim, '/ips?limit=3&full=yes');
    expect(r.status).toBe(200);
    const h = r.body.header;
    expect(h).toMatchObject({ type: 'ipv4', version: 2, ts: String(NOW), page_size: 3, delay: 0 });
    expect(h.eval).toContain('Math.exp');
    expect(h.exec_python).toContain('math.exp');
    expect(Object.keys(h.user as object).sort()).toEqual(['guid', 'member_of', 'name', 'role', 'surname', 'unsuccessful_login', 'username']);
    expect(r.body.body).toHaveLength(3);
    for (const it of r.body.body) {
      expect(Object.keys(it).sort()).toEqual(['dec', 'delay', 'entry_ts', 'gid', 'idx_entry_ts', 'idx_ts', 'info', 'ip', 'ip_info', 'is_network', 'score', 'ts'].sort());
      expect(Object.keys(it.info as object).sort()).toEqual(['attack_infos', 'events', 'members', 'notes', 'sources', 'stix_bundles']);
      expect(it.idx_ts).toBe(new Date(it.ts * 1000).toISOString());
      for (const v of Object.values(it.ip_info as object)) expect(typeof v).toBe('string');
    }
    const lean = await getJson<FeedPageWire>(sim, '/ips?limit=3');
    expect(lean.body.body[0]).not.toHaveProperty('ip_info');
    expect(Object.keys(lean.body.body[0]!.info as object).sort()).toEqual(['events', 'members', 'sources']);
  });

  it('filter=1 returns only the caller org', async () => {
    const r = await getJson<FeedPageWire>(sim, '/ips?filter=1');
    const own = (r.body.header.user as { member_of: { gid: string } }).member_of.gid;
    expect(r.body.body.length).toBeGreaterThan(100);
    expect(r.body.body.length).toBeLessThan(300);
    expect(r.body.body.every((it) => it.gid === own)).toBe(true);
  });
});

describe('POST /ips (E2) and manual decisions', () => {
  it.each([
    [{ confidence: 0.5 }, 'ip'],
    [{ ip: '1.2.3.4/24', confidence: 0.5 }, 'ip'],
    [{ ip: '300.1.1.1', confidence: 0.5 }, 'ip'],
    [{ ip: '198.51.100.1' }, 'confidence'],
    [{ ip: '198.51.100.1', confidence: 1.5 }, 'confidence'],
    [{ ip: '198.51.100.1', confidence: '0.5' }, 'confidence'],
    [{ ip: '198.51.100.1', confidence: 0.5, decision: 2 }, 'decision'],
    [{ ip: '198.51.100.1', confidence: 0.5, decision: '1' }, 'decision'],
    [{ ip: '198.51.100.1', confidence: 0.5, ttl: NOW - 1 }, 'ttl'],
    [{ ip: '198.51.100.1', confidence: 0.5, ttl: 'soon' }, 'ttl'],
    [{ ip: '198.51.100.1', confidence: 0.5, source: 5 }, 'source'],
    [{ ip: '198.51.100.1', confidence: 0.5, notes: [] }, 'notes'],
    [[], 'body'],
  ])('%j -> 400 naming %s', async (body, field) => {
    const r = await send(sim, 'POST', '/ips', body);
    expect(r.status).toBe(400);
    expect((r.json as { message: string }).message.startsWith(`${field}: `)).toBe(true);
  });

  it('rejects a non-JSON body', async () => {
    const r = await send(sim, 'POST', '/ips', '{nope');
    expect(r.status).toBe(400);
    expect((r.json as { message: string }).message).toMatch(/^body: /);
  });

  it('adds the indicator at the end of the feed and lists it under filter=2 until its ttl', async () => {
    const ip = '198.51.100.23';
    const r = await send(sim, 'POST', '/ips', { ip, confidence: 0.8, source: 'test', notes: 'n', decision: 1, ttl: NOW + 3600 });
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    const tail = await getJson<FeedPageWire>(sim, `/ips?ts=${NOW}&full=yes`);
    const item = tail.body.body.find((x) => x.ip === ip)!;
    expect(item).toMatchObject({ ts: NOW, score: 8, is_network: false });
    expect((item.info as { sources: string[] }).sources).toEqual(['test']);
    const own = await getJson<FeedPageWire>(sim, `/ips?filter=1&ts=${NOW}`);
    expect(own.body.body.map((x) => x.ip)).toContain(ip);
    const blocked = await getJson<FeedPageWire>(sim, '/ips?filter=2');
    expect(blocked.body.body.map((x) => x.ip)).toContain(ip);
    sim.clock.advance(3600);
    const later = await getJson<FeedPageWire>(sim, '/ips?filter=2');
    expect(later.body.body.map((x) => x.ip)).not.toContain(ip);
    sim.clock.set(NOW);
  });

  it('whitelists and clears decisions; an update moves the item to the end', async () => {
    const first = (await getJson<FeedPageWire>(sim, '/ips?limit=1')).body.body[0]!;
    sim.clock.set(NOW + 10);
    expect((await send(sim, 'POST', '/ips', { ip: first.ip, confidence: 0.1, decision: 0 })).status).toBe(200);
    const white = await getJson<FeedPageWire>(sim, '/ips?filter=3');
    expect(white.body.body.map((x) => x.ip)).toContain(first.ip);
    const head = (await getJson<FeedPageWire>(sim, '/ips?limit=1')).body.body[0]!;
    expect(head.ip).not.toBe(first.ip);
    const moved = (await getJson<FeedPageWire>(sim, `/ips?ts=${NOW + 10}`)).body.body;
    expect(moved).toEqual([expect.objectContaining({ ip: first.ip, ts: NOW + 10, score: first.score })]);
    await send(sim, 'POST', '/ips', { ip: first.ip, confidence: 0.1 });
    const white2 = await getJson<FeedPageWire>(sim, '/ips?filter=3');
    expect(white2.body.body.map((x) => x.ip)).not.toContain(first.ip);
    sim.clock.set(NOW);
  });

  it('free text with non-ASCII characters survives the ASCII page encoding', async () => {
    const source = 'capteur café ✓ \u{1F525} "quoted"';
    expect((await send(sim, 'POST', '/ips', { ip: '198.51.100.99', confidence: 0.3, source, notes: 'ünïcode' })).status).toBe(200);
    const page = await getJson<FeedPageWire>(sim, `/ips?ts=${NOW}&full=yes`);
    const item = page.body.body.find((x) => x.ip === '198.51.100.99')!;
    expect(item.info).toMatchObject({ sources: [source], notes: ['ünïcode'] });
  });

  it('filter=2/3 match the programmatic view', async () => {
    for (const f of [2, 3] as const) {
      const wire = (await getJson<FeedPageWire>(sim, `/ips?filter=${f}`)).body.body.map((x) => x.ip);
      const mine = [...sim.indicators(f)].map((x) => x.ip);
      expect(wire).toEqual(mine);
      expect(mine.length).toBeGreaterThan(0);
      expect([...sim.indicators()].filter((x) => x.decision === (f === 2 ? 1 : 0)).map((x) => x.ip)).toEqual(mine);
    }
  });
});

describe('agents (E7, E8, E9, reports)', () => {
  it('E7 lists the initial agent with its verbatim config', async () => {
    const r = await getJson<Record<string, unknown>[]>(sim, `/feedback?agid=${sim.agid}`);
    expect(r.status).toBe(200);
    expect(r.body).toHaveLength(1);
    expect(r.body[0]).toMatchObject({ agid: sim.agid, config: { maximum_rules: 500, score_threshold: '6', sync_time: 5, running: 'true' } });
    const all = await getJson<unknown[]>(sim, '/feedback');
    expect(all.body.length).toBeGreaterThanOrEqual(1);
  });

  it('E8 strings in, E7 numbers out; creates a missing record', async () => {
    const r = await send(sim, 'POST', '/feedback/config?agid=cfg-1', { maximum_rules: '1200', running: 'false', score_threshold: '3', sync_time: '15', version: '0.2.0' });
    expect(r.status).toBe(200);
    const e7 = await getJson<Record<string, unknown>[]>(sim, '/feedback?agid=cfg-1');
    expect(e7.body[0]!.config).toEqual({ maximum_rules: 1200, running: 'false', score_threshold: 3, sync_time: 15, version: '0.2.0' });
    expect((await send(sim, 'POST', '/feedback/config?agid=cfg-1', { sync_time: '30' })).status).toBe(200);
    expect(sim.getAgent('cfg-1')!.config).toMatchObject({ sync_time: 30, maximum_rules: 1200 });
  });

  it.each([
    [{ maximum_rules: 5 }, 'maximum_rules'],
    [{ maximum_rules: '5x' }, 'maximum_rules'],
    [{ score_threshold: '-1' }, 'score_threshold'],
    [{ sync_time: {} }, 'sync_time'],
    [{ running: true }, 'running'],
    [{ version: 2 }, 'version'],
    [{ colour: 'red' }, 'colour'],
  ])('E8 %j -> 400 naming %s', async (body, field) => {
    const r = await send(sim, 'POST', '/feedback/config?agid=cfg-2', body);
    expect(r.status).toBe(400);
    expect((r.json as { message: string }).message.startsWith(`${field}: `)).toBe(true);
  });

  it('E8/E9/report need agid', async () => {
    for (const [m, p, b] of [['POST', '/feedback/config', {}], ['DELETE', '/feedback', undefined], ['POST', '/feedback', sampleReport('x')]] as const) {
      const r = await send(sim, m, p, b);
      expect(r.status).toBe(400);
      expect((r.json as { message: string }).message).toMatch(/^agid: /);
    }
  });

  it('a report is stored, logged and merged into the record', async () => {
    await send(sim, 'POST', '/feedback/config?agid=rep-1', { running: 'true' });
    const body = sampleReport('rep-1', { code: 3, blacklist: ['203.0.113.9'] });
    const r = await send(sim, 'POST', '/feedback?agid=rep-1', body);
    expect(r.status).toBe(200);
    expect(sim.reports.at(-1)).toEqual({ agid: 'rep-1', body, at: NOW, status: 200 });
    const e7 = await getJson<Record<string, unknown>[]>(sim, '/feedback?agid=rep-1');
    expect(e7.body[0]).toMatchObject({ agid: 'rep-1', code: 3, blacklist: ['203.0.113.9'], hostanme: 'host-1', plugin: 'dry-run', sync_time: '5', ts: 1_700_000_000 });
  });

  it.each([
    [{ hostanme: 5 }, 'hostanme'],
    [{ blacklist: 'x' }, 'blacklist'],
    [{ blacklist: [1] }, 'blacklist'],
    [{ code: 'ok' }, 'code'],
    [{ sync_time: 5 }, 'sync_time'],
    [{ ts: -1 }, 'ts'],
    [{ maximum_rules: '5' }, 'maximum_rules'],
    [{ version: undefined }, 'version'],
    [{ agid: 'other' }, 'agid'],
  ])('report %j -> 400 naming %s', async (over, field) => {
    const r = await send(sim, 'POST', '/feedback?agid=rep-1', sampleReport('rep-1', over));
    expect(r.status).toBe(400);
    expect((r.json as { message: string }).message.startsWith(`${field}: `)).toBe(true);
  });

  it('deleted agent: E7 404 (or [] in empty mode), report 404 without re-creating', async () => {
    await send(sim, 'POST', '/feedback/config?agid=del-1', { running: 'true' });
    expect((await send(sim, 'DELETE', '/feedback?agid=del-1')).status).toBe(200);
    expect((await send(sim, 'DELETE', '/feedback?agid=del-1')).status).toBe(404);
    const e7 = await getJson(sim, '/feedback?agid=del-1');
    expect(e7).toEqual({ status: 404, body: { message: 'agent not found' } });
    sim.setDeletedAgentResponse('empty');
    expect(await getJson(sim, '/feedback?agid=del-1')).toEqual({ status: 200, body: [] });
    const r = await send(sim, 'POST', '/feedback?agid=del-1', sampleReport('del-1'));
    expect(r.status).toBe(404);
    expect(sim.getAgent('del-1')).toBeUndefined();
    expect(sim.reports.at(-1)).toMatchObject({ agid: 'del-1', status: 404 });
  });
});

describe('control routes', () => {
  it('drive the simulator out of process', async () => {
    const ctl = (method: string, path: string, body?: unknown): Promise<Response> =>
      fetch(sim.origin + path, { method, headers: { authorization: sim.token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    expect(await (await ctl('POST', '/_sim/clock', { advance: 60 })).json()).toEqual({ now: NOW + 60 });
    await ctl('POST', '/_sim/indicators', { ip: '192.0.2.0/24', score: 9, decision: 1 });
    expect([...sim.indicators(2)].map((x) => x.ip)).toContain('192.0.2.0/24');
    await ctl('DELETE', '/_sim/indicators?ip=192.0.2.0/24');
    expect([...sim.indicators()].map((x) => x.ip)).not.toContain('192.0.2.0/24');
    await ctl('POST', '/_sim/fault', { mode: 'http500', count: 1 });
    expect((await getJson(sim, '/ips?limit=1')).status).toBe(500);
    expect((await getJson(sim, '/ips?limit=1')).status).toBe(200);
    await ctl('POST', '/_sim/agent-config?agid=ctl-1', { sync_time: '7' });
    expect(await (await ctl('GET', '/_sim/agents?agid=ctl-1')).json()).toMatchObject({ config: { sync_time: '7' } });
    const stats = (await (await ctl('GET', '/_sim/stats')).json()) as { requests: number };
    expect(stats.requests).toBeGreaterThan(0);
    expect((await ctl('POST', '/_sim/fault', { mode: 'bogus' })).status).toBe(400);
    sim.clock.set(NOW);
  });
});
