/**
 * Request validation. Every failure is a 400 whose `message` starts with the field name
 * (`limit: must be an integer from 1 to 1000`).
 */
import { parseIp } from './ipspace.js';
import type { Decision } from './store.js';

export class ValidationError extends Error {
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`${field}: ${detail}`);
  }
}

const UINT = /^(?:0|[1-9]\d*)$/;

/** Integer query parameter in [min, max] (digits only, no sign, no leading zeros). */
export function intParam(q: URLSearchParams, name: string, min: number, max: number, def: number): number {
  const raw = q.get(name);
  if (raw === null) return def;
  const n = Number(raw);
  if (!UINT.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new ValidationError(name, max === Number.MAX_SAFE_INTEGER ? `must be an integer >= ${min}` : `must be an integer from ${min} to ${max}`);
  }
  return n;
}

export interface FeedQuery {
  limit: number;
  filter: number;
  ts: number;
  full: boolean;
}

export function feedQuery(q: URLSearchParams): FeedQuery {
  const limit = intParam(q, 'limit', 1, 1000, 1000);
  const filter = intParam(q, 'filter', 0, 3, 0);
  const ts = intParam(q, 'ts', 0, Number.MAX_SAFE_INTEGER, 0);
  const f = q.get('full');
  if (f !== null && !/^(?:yes|no)$/i.test(f)) throw new ValidationError('full', 'must be "yes" or "no"');
  return { limit, filter, ts, full: f !== null && f.toLowerCase() === 'yes' };
}

/** GET /urls query: `ts` >= 0 (0), `limit` 101..1999 (the spec's `100 < x < 2000`; default 1000). */
export function urlQuery(q: URLSearchParams): { ts: number; limit: number } {
  return { ts: intParam(q, 'ts', 0, Number.MAX_SAFE_INTEGER, 0), limit: intParam(q, 'limit', 101, 1999, 1000) };
}

/** PUT /urls/{url} path: one percent-encoded segment holding an http(s) URL. */
export function urlParam(segment: string): string {
  let url: string;
  try {
    url = decodeURIComponent(segment);
  } catch {
    throw new ValidationError('url', 'invalid percent-encoding');
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError('url', 'must be a valid URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ValidationError('url', 'must be an http or https URL');
  return url;
}

/** PUT /urls/{url} body: `decision` -1, 0 or 1. */
export function decisionBody(body: unknown): -1 | 0 | 1 {
  const d = requireObject(body).decision;
  if (d !== -1 && d !== 0 && d !== 1) throw new ValidationError('decision', 'must be one of -1, 0, 1');
  return d;
}

/** GET /files/{digest}: the digest (MD5, SHA1 or SHA256 hex) and `deep` YES/NO (default NO). */
export function digestParam(segment: string, q: URLSearchParams): { digest: string; deep: boolean } {
  if (!/^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/.test(segment)) throw new ValidationError('digest', 'must be an MD5, SHA1 or SHA256 hex digest');
  const deep = q.get('deep');
  if (deep !== null && deep !== 'YES' && deep !== 'NO') throw new ValidationError('deep', 'must be "YES" or "NO"');
  return { digest: segment, deep: deep === 'YES' };
}

export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ValidationError('body', 'must be a JSON object');
  return body as Record<string, unknown>;
}

function optString(b: Record<string, unknown>, k: string): string | undefined {
  const v = b[k];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new ValidationError(k, 'must be a string');
  return v;
}

export interface IpReport {
  ip: string;
  confidence: number;
  source?: string | undefined;
  notes?: string | undefined;
  decision: Decision;
  ttl?: number | undefined;
}

/** E2 body. `ip` and `confidence` are required; `decision` defaults to -1. */
export function ipReport(body: unknown, now: number): IpReport {
  const b = requireObject(body);
  if (typeof b.ip !== 'string' || !parseIp(b.ip)) throw new ValidationError('ip', 'must be an IPv4 address or CIDR network (host bits zero)');
  const c = b.confidence;
  if (typeof c !== 'number' || !Number.isFinite(c) || c < 0 || c > 1) throw new ValidationError('confidence', 'must be a number from 0 to 1');
  const source = optString(b, 'source');
  const notes = optString(b, 'notes');
  const d = b.decision ?? -1;
  if (d !== -1 && d !== 0 && d !== 1) throw new ValidationError('decision', 'must be one of -1, 0, 1');
  let ttl: number | undefined;
  if (b.ttl !== undefined && b.ttl !== null) {
    if (typeof b.ttl !== 'number' || !Number.isFinite(b.ttl)) throw new ValidationError('ttl', 'must be a number (epoch s)');
    if (b.ttl <= now) throw new ValidationError('ttl', 'must be a timestamp in the future');
    ttl = b.ttl;
  }
  return { ip: b.ip, confidence: c, source, notes, decision: d, ttl };
}

export const CONFIG_FIELDS = ['maximum_rules', 'running', 'score_threshold', 'sync_time', 'version'] as const;
const INT_FIELDS = new Set(['maximum_rules', 'score_threshold', 'sync_time']);

/** E8 body: any subset of the five fields, each a string; integer fields decimal digits. */
export function configBody(body: unknown): Record<string, string> {
  const b = requireObject(body);
  const out: Record<string, string> = {};
  for (const k of Object.keys(b)) {
    if (!(CONFIG_FIELDS as readonly string[]).includes(k)) throw new ValidationError(k, 'unknown field');
    const v = b[k];
    if (typeof v !== 'string') throw new ValidationError(k, 'must be a string');
    if (INT_FIELDS.has(k) && !(UINT.test(v) && Number.isSafeInteger(Number(v)))) throw new ValidationError(k, 'must be a decimal integer string');
    out[k] = v;
  }
  return out;
}

/** POST /feedback body (contract section 3). All fields required; extra fields allowed. */
export function stateReport(body: unknown, agid: string): Record<string, unknown> {
  const b = requireObject(body);
  const str = (k: string): void => {
    if (typeof b[k] !== 'string') throw new ValidationError(k, 'must be a string');
  };
  const int = (k: string): void => {
    if (typeof b[k] !== 'number' || !Number.isSafeInteger(b[k]) || (b[k] as number) < 0) throw new ValidationError(k, 'must be a non-negative integer');
  };
  str('agid');
  if (b.agid !== agid) throw new ValidationError('agid', 'must equal the agid query parameter');
  str('hostanme');
  str('plugin');
  if (typeof b.code !== 'number' || !Number.isInteger(b.code)) throw new ValidationError('code', 'must be an integer');
  if (!Array.isArray(b.blacklist) || !b.blacklist.every((x) => typeof x === 'string')) throw new ValidationError('blacklist', 'must be an array of strings');
  for (const k of ['maximum_rules', 'score_threshold']) {
    if (typeof b[k] !== 'number' || !Number.isFinite(b[k])) throw new ValidationError(k, 'must be a number');
  }
  str('sync_time');
  int('ts');
  str('version');
  return b;
}
