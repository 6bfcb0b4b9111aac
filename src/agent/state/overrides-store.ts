import { join } from 'node:path';
import { StateError } from '../../errors.js';
import { jsonErrorSpot } from '../../config/json-position.js';
import { parseCidr, toCidr } from '../../net/ipv4.js';
import type { LocalOverride } from '../../policy/overrides.js';
import { writeFileAtomic } from '../../util/atomic-file.js';
import { readStateFile, UnsafeStateFile } from '../../util/untrusted-file.js';

/**
 * The operator's local overrides (`wcf-agent allow` / `block`), kept in
 * `<state_dir>/overrides.json` so they survive restarts. Written only by the
 * CLI (under the agent lock); the daemon only reads it, and an expired entry
 * simply stops counting, so no process has to rewrite the file when one ends.
 */
const FILE = 'overrides.json';
const VERSION = 1;
/** An overrides file is small: a few hundred entries at most in practice. */
const MAX_BYTES = 4 * 1024 * 1024;
/** Notes are the operator's own words; kept short so listings stay one line. */
export const MAX_NOTE = 200;

export function overridesPath(stateDir: string): string {
  return join(stateDir, FILE);
}

function parseOne(raw: unknown, at: string): LocalOverride {
  if (typeof raw !== 'object' || raw === null) throw new Error(`${at}: not an object`);
  const r = raw as Record<string, unknown>;
  const cidr = typeof r.cidr === 'string' ? toCidr(r.cidr) : undefined;
  if (!cidr) throw new Error(`${at}.cidr: not an IPv4 address or network`);
  if (r.action !== 'allow' && r.action !== 'block') throw new Error(`${at}.action: must be allow or block`);
  if (typeof r.createdAt !== 'number' || !Number.isFinite(r.createdAt)) throw new Error(`${at}.createdAt: not a number`);
  if (r.expiresAt !== null && (typeof r.expiresAt !== 'number' || !Number.isFinite(r.expiresAt))) throw new Error(`${at}.expiresAt: not a number or null`);
  if (r.note !== undefined && (typeof r.note !== 'string' || r.note.length > MAX_NOTE)) throw new Error(`${at}.note: not a string of at most ${MAX_NOTE} characters`);
  return { cidr, action: r.action, createdAt: r.createdAt, expiresAt: r.expiresAt as number | null, ...(r.note !== undefined ? { note: r.note as string } : {}) };
}

/**
 * Every stored override (expired ones included: callers filter by time). A
 * missing file is no overrides; a file that cannot be parsed is an error (a
 * silently dropped allow would let the agent block a host the operator freed).
 */
export function loadOverrides(stateDir: string): LocalOverride[] {
  const path = overridesPath(stateDir);
  let buf: Buffer | undefined;
  try {
    buf = readStateFile(path, MAX_BYTES);
  } catch (err) {
    if (err instanceof UnsafeStateFile) throw new StateError(`cannot read ${path}: ${err.reason}`, { cause: err });
    throw err;
  }
  if (buf === undefined) return [];
  const text = buf.toString('utf8');
  let raw: { version?: unknown; overrides?: unknown };
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch (err) {
    // JSON.parse's message quotes the text: the file is never quoted (status and every cycle's log would repeat it).
    const at = jsonErrorSpot(text);
    throw new StateError(`cannot use ${path}: not valid JSON${at ? ` at line ${at.line}, column ${at.column}` : ''} (fix or remove the file)`, { cause: err });
  }
  try {
    if (raw === null || typeof raw !== 'object' || raw.version !== VERSION || !Array.isArray(raw.overrides)) throw new Error('unknown format');
    return raw.overrides.map((o, i) => parseOne(o, `overrides[${i}]`));
  } catch (err) {
    throw new StateError(`cannot use ${path}: ${(err as Error).message} (fix or remove the file)`, { cause: err });
  }
}

export function saveOverrides(stateDir: string, overrides: readonly LocalOverride[]): void {
  const rows = overrides.map((o) => ({ cidr: o.cidr.text, action: o.action, createdAt: o.createdAt, expiresAt: o.expiresAt, ...(o.note !== undefined ? { note: o.note } : {}) }));
  try {
    writeFileAtomic(overridesPath(stateDir), JSON.stringify({ version: VERSION, overrides: rows }, null, 1) + '\n');
  } catch (err) {
    throw new StateError(`cannot write ${overridesPath(stateDir)}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The store after adding `next`: an override for the same network replaces the
 * old one (allow then block of one address is a change of mind, not two rules),
 * and expired ones are dropped while the file is rewritten anyway.
 */
export function withOverride(list: readonly LocalOverride[], next: LocalOverride, now: number): LocalOverride[] {
  return [...list.filter((o) => o.cidr.text !== next.cidr.text && (o.expiresAt === null || o.expiresAt > now)), next];
}

/** The store without the override for exactly `address` (a network's text, canonical), or undefined if there is none. */
export function withoutOverride(list: readonly LocalOverride[], address: string, now: number): LocalOverride[] | undefined {
  const parsed = parseCidr(address);
  if (!parsed.ok) return undefined;
  const live = list.filter((o) => o.expiresAt === null || o.expiresAt > now);
  const kept = live.filter((o) => o.cidr.text !== parsed.cidr.text);
  return kept.length === live.length ? undefined : kept;
}
