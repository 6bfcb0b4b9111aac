import type { IpReportBody } from '../../api/threat-intel.js';
import { UsageError } from '../../errors.js';
import { parseCidr } from '../../net/ipv4.js';
import { createApi, loadContext, type GlobalOptions } from '../context.js';
import { isoTime, printJson } from '../format.js';

export interface ReportFlags {
  confidence?: string;
  decision?: string;
  ttl?: string;
  notes?: string;
  source?: string;
}

/** Free-text fields: the spec gives no limit; this keeps a typo (a pasted file) from becoming a 413. */
export const TEXT_MAX = 2000;
/** --ttl values at or above this are epoch seconds; below, seconds from now. */
const EPOCH_FROM = 1_000_000_000;
const DECISIONS: Record<string, -1 | 0 | 1> = { block: 1, '1': 1, allow: 0, '0': 0, none: -1, '-1': -1 };
const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Strict IPv4 address or network; host bits must be zero (no silent widening). `/32` becomes the address. */
export function parseReportIp(value: string): string {
  const r = parseCidr(value.trim());
  if (!r.ok) throw new UsageError(`IP: ${r.error}`);
  const given = value.trim();
  if (given.includes('/') && r.cidr.prefix !== 32 && r.cidr.text !== given) {
    throw new UsageError(`IP: ${JSON.stringify(given)} has host bits set; the network is ${r.cidr.text}`);
  }
  return r.cidr.text;
}

export function parseConfidence(value: string | undefined): number {
  const v = (value ?? '').trim();
  const n = Number(v);
  if (!/^(?:\d+(?:\.\d*)?|\.\d+)$/.test(v) || !(n >= 0 && n <= 1)) throw new UsageError(`--confidence: expected a number from 0 to 1 (e.g. 0.8), got ${JSON.stringify(value ?? '')}`);
  return n;
}

export function parseDecision(value: string | undefined): -1 | 0 | 1 {
  if (value === undefined) return -1;
  const d = DECISIONS[value.trim().toLowerCase()];
  if (d === undefined) throw new UsageError(`--decision: expected block, allow or none (or 1, 0, -1), got ${JSON.stringify(value)}`);
  return d;
}

/** `3600`, `90m`, `12h`, `7d` (from now) or an epoch timestamp in seconds; must lie in the future. */
export function parseTtl(value: string, now: number): number {
  const m = /^(\d+)([smhd])?$/.exec(value.trim());
  const bad = (why: string) => new UsageError(`--ttl: ${why}, got ${JSON.stringify(value)}`);
  if (!m) throw bad('expected seconds from now (3600, or 90m, 12h, 7d) or an epoch timestamp in seconds');
  const n = Number(m[1]);
  if (!Number.isSafeInteger(n)) throw bad('number too large');
  const ttl = m[2] === undefined && n >= EPOCH_FROM ? n : now + n * UNIT_S[m[2] ?? 's']!;
  if (ttl <= now) throw bad(`must lie in the future (now is ${now})`);
  if (!Number.isSafeInteger(ttl)) throw bad('number too large');
  return ttl;
}

function textField(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > TEXT_MAX) throw new UsageError(`${flag}: at most ${TEXT_MAX} characters, got ${value.length}`);
  return value;
}

/** The indicator-report body from the command line, every value checked against the spec's limits before anything is sent. */
export function buildReport(ip: string, o: ReportFlags, now: number): IpReportBody {
  const body: IpReportBody = { ip: parseReportIp(ip), confidence: parseConfidence(o.confidence), decision: parseDecision(o.decision) };
  if (o.ttl !== undefined) body.ttl = parseTtl(o.ttl, now);
  const source = textField('--source', o.source);
  const notes = textField('--notes', o.notes);
  if (source !== undefined) body.source = source;
  if (notes !== undefined) body.notes = notes;
  return body;
}

const DECISION_TEXT = { 1: 'block', 0: 'allow (whitelist)', [-1]: 'none (score-based)' } as const;

/** `wcf-agent report IP --confidence C ...`: report an indicator or set its decision. */
export async function reportCommand(ip: string, opts: GlobalOptions & ReportFlags & { json?: boolean }): Promise<number> {
  const body = buildReport(ip, opts, Math.floor(Date.now() / 1000));
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = createApi(config, logger);
  try {
    await api.reportIndicator(body);
  } finally {
    await api.client.close();
  }
  if (opts.json) {
    await printJson({ reported: body });
    return 0;
  }
  process.stdout.write(
    `reported ${body.ip}: confidence ${body.confidence}, decision ${DECISION_TEXT[body.decision]}${body.ttl ? ` until ${isoTime(body.ttl)}` : ''}\n` +
      (body.decision === 1 ? 'agents block it at their next sync (manual blocks come first and do not expire by score)\n' : '') +
      (body.decision === 0 ? 'agents stop blocking it at their next sync\n' : ''),
  );
  return 0;
}
