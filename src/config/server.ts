import { HARD_LIMITS } from './schema.js';

/** The settings the API stores per agent (the `config` of GET /feedback), as the agent uses them. */
export interface Settings {
  maximum_rules: number;
  score_threshold: number;
  sync_time: number;
  running: boolean;
  /** Desired agent version; logged when it differs from ours. */
  version: string | null;
}

export type SettingSource = 'server' | 'previous' | 'local default';
export type SettingSources = Record<keyof Settings, SettingSource>;

export interface ResolvedSettings {
  settings: Settings;
  sources: SettingSources;
  /** `config.<key>: message` for each value rejected (previous value kept). */
  problems: string[];
}

const RUNNING_ON = new Set(['true', 'yes', 'on', '1', 'enabled', 'running']);
const RUNNING_OFF = new Set(['false', 'no', 'off', '0', 'disabled', 'stopped']);

function positiveInt(v: unknown, max: number): number | string {
  let n: number;
  if (typeof v === 'number') n = v;
  else if (typeof v === 'string' && /^\s*\d+\s*$/.test(v)) n = Number(v);
  else return `expected a positive integer (number or numeric string), got ${JSON.stringify(v)?.slice(0, 40)}`;
  if (!Number.isSafeInteger(n) || n < 1) return `expected a positive integer, got ${JSON.stringify(v)?.slice(0, 40)}`;
  if (n > max) return `${n} is above the limit ${max}`;
  return n;
}

function runningFlag(v: unknown): boolean | string {
  const s = typeof v === 'boolean' ? String(v) : typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim().toLowerCase() : undefined;
  if (s !== undefined && RUNNING_ON.has(s)) return true;
  if (s !== undefined && RUNNING_OFF.has(s)) return false;
  return `expected one of true/yes/on/1/enabled/running or false/no/off/0/disabled/stopped, got ${JSON.stringify(v)?.slice(0, 40)}`;
}

/**
 * Merge the server's stored configuration over the previous settings: each valid value is taken; an invalid one keeps the previous value
 * and is reported. A missing key keeps the previous value too. `raw` undefined
 * (record deleted, or no config object) keeps everything.
 */
export function resolveSettings(
  raw: Record<string, unknown> | undefined,
  previous: Settings,
  previousSources: SettingSources,
): ResolvedSettings {
  const settings: Settings = { ...previous };
  const sources: SettingSources = { ...previousSources };
  const problems: string[] = [];
  if (raw === undefined) return { settings, sources, problems };

  const numeric = [
    ['maximum_rules', HARD_LIMITS.maximum_rules],
    ['score_threshold', HARD_LIMITS.score_threshold],
    ['sync_time', HARD_LIMITS.sync_time],
  ] as const;
  for (const [key, max] of numeric) {
    if (!(key in raw) || raw[key] === null || raw[key] === '') continue;
    const v = positiveInt(raw[key], max);
    if (typeof v === 'string') problems.push(`config.${key}: ${v}`);
    else {
      settings[key] = v;
      sources[key] = 'server';
    }
  }
  if ('running' in raw && raw.running !== null && raw.running !== '') {
    const v = runningFlag(raw.running);
    if (typeof v === 'string') problems.push(`config.running: ${v}`);
    else {
      settings.running = v;
      sources.running = 'server';
    }
  }
  if (typeof raw.version === 'string' && raw.version.trim()) {
    settings.version = raw.version.trim().slice(0, 64);
    sources.version = 'server';
  }
  return { settings, sources, problems };
}

export const LOCAL_DEFAULT_SOURCES: SettingSources = {
  maximum_rules: 'local default',
  score_threshold: 'local default',
  sync_time: 'local default',
  running: 'local default',
  version: 'local default',
};
