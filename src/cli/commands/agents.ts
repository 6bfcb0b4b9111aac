import { createInterface } from 'node:readline/promises';
import type { AgentRecord, StoredConfigBody } from '../../api/wire.js';
import { HARD_LIMITS } from '../../config/schema.js';
import { ApiStatusError, UsageError } from '../../errors.js';
import { createApi, loadContext, type GlobalOptions } from '../context.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { terminalSafe } from '../../util/terminal-text.js';

const RUNNING: Record<string, 'true' | 'false'> = {
  on: 'true', true: 'true', yes: 'true', enabled: 'true',
  off: 'false', false: 'false', no: 'false', disabled: 'false',
};

export function parseAgid(value: string | undefined): string {
  const v = (value ?? '').trim();
  if (!v || v.length > 200 || /[\s\x00-\x1f]/.test(v)) throw new UsageError(`--agid: expected an agent ID (1..200 characters, no spaces), got ${JSON.stringify(value ?? '')}`);
  return v;
}

/** A whole number 1..max, digits only; `flag` names the option in the message. */
export function parsePositiveInt(flag: string, value: string, max: number): string {
  const v = value.trim();
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > max) throw new UsageError(`${flag}: expected a whole number from 1 to ${max}, got ${JSON.stringify(value)}`);
  return String(Number(v));
}

export interface ConfigureFlags {
  maximumRules?: string;
  scoreThreshold?: string;
  syncTime?: string;
  running?: string;
  version?: string;
}

/** The stored-configuration body: only the fields given, all strings, each validated first. At least one is required. */
export function configureBody(o: ConfigureFlags): StoredConfigBody {
  const body: StoredConfigBody = {};
  if (o.maximumRules !== undefined) body.maximum_rules = parsePositiveInt('--maximum-rules', o.maximumRules, HARD_LIMITS.maximum_rules);
  if (o.scoreThreshold !== undefined) body.score_threshold = parsePositiveInt('--score-threshold', o.scoreThreshold, HARD_LIMITS.score_threshold);
  if (o.syncTime !== undefined) body.sync_time = parsePositiveInt('--sync-time', o.syncTime, HARD_LIMITS.sync_time);
  if (o.running !== undefined) {
    const r = RUNNING[o.running.trim().toLowerCase()];
    if (!r) throw new UsageError(`--running: expected on or off (also true/false, yes/no, enabled/disabled), got ${JSON.stringify(o.running)}`);
    body.running = r;
  }
  if (o.version !== undefined) {
    if (!/^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$/.test(o.version)) throw new UsageError(`--version: expected a version such as 0.2.0 (letters, digits, . + _ -; at most 64), got ${JSON.stringify(o.version)}`);
    body.version = o.version;
  }
  if (Object.keys(body).length === 0) throw new UsageError('agents configure: give at least one of --maximum-rules, --score-threshold, --sync-time, --running, --version');
  return body;
}

/** A record's value for the terminal: the server's text, its control and bidi characters escaped. */
const text = (v: unknown) => (v === undefined || v === null || v === '' ? '-' : terminalSafe(String(v)));

export function agentRows(records: readonly AgentRecord[], now: number): string[][] {
  return records.map((r) => {
    const c = r.config ?? {};
    const ts = typeof r.ts === 'number' && r.ts > 0 ? r.ts : undefined;
    return [
      text(r.agid),
      text(r.hostanme),
      text(r.plugin),
      text(r.code),
      Array.isArray(r.blacklist) ? String(r.blacklist.length) : '-',
      ts ? `${isoTime(ts)} (${duration(now - ts)} ago)` : 'never',
      text(c.running) + (r.active === false ? ' (inactive)' : ''),
      text(c.maximum_rules),
      text(c.score_threshold),
      text(c.sync_time),
      text(c.version),
    ];
  });
}

export async function agentsListCommand(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = createApi(config, logger);
  try {
    const agents = await api.agents();
    if (opts.json) await printJson({ agents });
    else {
      const headers = ['agid', 'hostname', 'plugin', 'code', 'entries', 'last sync', 'running', 'max rules', 'threshold', 'sync min', 'version'];
      process.stdout.write(table(headers, agentRows(agents, Math.floor(Date.now() / 1000)), ['l', 'l', 'l', 'r', 'r', 'l', 'l', 'r', 'r', 'r', 'l']) + '\n');
      process.stdout.write(`\n${agents.length} agent${agents.length === 1 ? '' : 's'}; columns running..version are the stored configuration\n`);
    }
    return 0;
  } finally {
    await api.client.close();
  }
}

export async function agentsConfigureCommand(opts: GlobalOptions & ConfigureFlags & { agid?: string; json?: boolean }): Promise<number> {
  const agid = parseAgid(opts.agid);
  const body = configureBody(opts); // validated before anything is sent
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = createApi(config, logger);
  try {
    await api.storeConfig(agid, body);
    const stored: Record<string, unknown> = (await api.agent(agid))?.config ?? { ...body };
    if (opts.json) {
      await printJson({ agid, stored });
      return 0;
    }
    const shown = ['maximum_rules', 'score_threshold', 'sync_time', 'running', 'version'].map((k) => `${k}=${text(stored[k])}`).join(' ');
    process.stdout.write(`stored for agent ${agid}: ${shown}\nthe agent applies it at its next sync\n`);
    return 0;
  } finally {
    await api.client.close();
  }
}

async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^(?:y|yes)$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

export async function agentsDeleteCommand(opts: GlobalOptions & { agid?: string; yes?: boolean; json?: boolean }): Promise<number> {
  const agid = parseAgid(opts.agid);
  if (!opts.yes && !process.stdin.isTTY) {
    throw new UsageError(`agents delete: refusing to delete agent ${agid} without confirmation (stdin is not a terminal); pass --yes to confirm`);
  }
  const { config, logger } = loadContext(opts, { agidOptional: true });
  const api = createApi(config, logger);
  try {
    const record = await api.agent(agid);
    if (record === null) throw new ApiStatusError(404, `no record for agent ${agid} on ${config.base_url}`);
    const running = !/^(?:false|no|off|0|disabled|stopped)$/i.test(String(record.config?.running ?? 'true').trim());
    if (!opts.yes) {
      const note = running ? ' It is still enforcing (running on).' : '';
      if (!(await confirm(`Delete the record of agent ${agid} (${text(record.hostanme)}) on ${config.base_url}?${note} [y/N] `))) {
        process.stderr.write('not deleted\n');
        return 1;
      }
    }
    await api.deleteAgent(agid);
    if (opts.json) {
      await printJson({ agid, deleted: true, was_running: running });
      return 0;
    }
    process.stdout.write(
      `deleted the record of agent ${agid}\n` +
        `note: deleting does not stop the agent: it keeps enforcing its last known configuration${running ? ' (it was running)' : ''} and gets no more configuration changes.\n` +
        `      To stop enforcement, set running off first and wait for one sync (wcf-agent agents configure --agid ${agid} --running off), then delete;\n` +
        `      or on that host: systemctl stop wcf-agent && wcf-agent flush\n`,
    );
    return 0;
  } finally {
    await api.client.close();
  }
}
