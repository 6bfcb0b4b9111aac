/** Helpers shared by the simulator's tests (and usable by other test suites). */
import type { FeedItemLite, Simulator } from './index.js';

export interface FeedItemWire {
  ip: string;
  ts: number;
  score: number;
  is_network: boolean;
  gid: string;
  [k: string]: unknown;
}

export interface FeedPageWire {
  header: Record<string, unknown>;
  body: FeedItemWire[];
}

export function authHeaders(sim: Simulator): Record<string, string> {
  return { authorization: `Bearer ${sim.token}` };
}

export async function getJson<T = unknown>(sim: Simulator, path: string): Promise<{ status: number; body: T }> {
  const r = await fetch(sim.url + path, { headers: authHeaders(sim) });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export async function send(sim: Simulator, method: string, path: string, body?: unknown): Promise<{ status: number; text: string; json: unknown }> {
  const r = await fetch(sim.url + path, {
    method,
    headers: { ...authHeaders(sim), 'content-type': 'application/json' },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: r.status, text, json };
}

export interface WalkResult {
  pages: FeedItemWire[][];
  /** De-duplicated by ip, the newest record wins. */
  byIp: Map<string, FeedItemWire>;
  requests: number;
}

/**
 * The client-side walk the contract describes: start at ts=from, ask again from the largest
 * ts of every full page, step to ts+1 when a full page holds a single ts (more than `limit`
 * items share it), stop at the first page that is not full.
 */
export async function walkFeed(sim: Simulator, opts: { limit?: number; filter?: number; from?: number; full?: 'yes' | 'no' } = {}): Promise<WalkResult> {
  const limit = opts.limit ?? 1000;
  let ts = opts.from ?? 0;
  const pages: FeedItemWire[][] = [];
  const byIp = new Map<string, FeedItemWire>();
  for (;;) {
    const q = `/ips?limit=${limit}&filter=${opts.filter ?? 0}&ts=${ts}&full=${opts.full ?? 'no'}`;
    const { status, body } = await getJson<FeedPageWire>(sim, q);
    if (status !== 200) throw new Error(`GET ${q}: ${status}`);
    pages.push(body.body);
    for (const it of body.body) byIp.set(it.ip, it);
    if (body.body.length < limit) break;
    const first = body.body[0]!.ts;
    const last = body.body[body.body.length - 1]!.ts;
    if (last < ts) throw new Error('feed went backwards');
    ts = first === last ? last + 1 : last;
  }
  return { pages, byIp, requests: pages.length };
}

/**
 * What a ts-cursor walk can see: for every group of items sharing one ts, the first
 * min(count, limit) in feed order (the rest of a group larger than a page is unreachable).
 */
export function reachable(items: Iterable<FeedItemLite>, limit: number): FeedItemLite[] {
  const out: FeedItemLite[] = [];
  let ts = Number.NaN;
  let n = 0;
  for (const it of items) {
    if (it.ts !== ts) {
      ts = it.ts;
      n = 0;
    }
    if (n++ < limit) out.push(it);
  }
  return out;
}

export function sampleReport(agid: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    agid,
    hostanme: 'host-1',
    plugin: 'dry-run',
    code: 0,
    blacklist: ['198.51.100.7', '203.0.113.0/24'],
    maximum_rules: 20000,
    score_threshold: 4,
    sync_time: '5',
    ts: 1_700_000_000,
    version: '0.1.0',
    ...over,
  };
}
