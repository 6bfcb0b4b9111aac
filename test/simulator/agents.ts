/**
 * WCF agent records (E7/E8/E9) and the state reports agents send (POST /feedback).
 *
 * Config set programmatically (startSimulator's agentConfig, setAgentConfig, /_sim/agent-config)
 * is stored VERBATIM, so tests can hand the agent numeric strings or junk (contract section 4).
 * Config set through E8 is validated (strings) and its integer fields are stored as numbers.
 */

export type ConfigValue = string | number;

export interface AgentRecord {
  agid: string;
  blacklist: string[];
  code: number;
  hostanme: string;
  maximum_rules: number;
  mgid: string;
  plugin: string;
  score_threshold: number;
  sync_time: string;
  ts: number;
  active?: boolean;
  config: Record<string, unknown>;
}

export interface ReportEntry {
  agid: string;
  body: unknown;
  /** Server clock (epoch s) when received. */
  at: number;
  /** 200 when merged into the record, 404 when the record did not exist. */
  status: number;
}

/** Fields of a report merged into an existing agent record. */
const MERGED = ['blacklist', 'code', 'hostanme', 'plugin', 'maximum_rules', 'score_threshold', 'sync_time', 'ts'] as const;

export const DEFAULT_AGENT_CONFIG = {
  maximum_rules: 20000,
  running: 'true',
  score_threshold: 4,
  sync_time: 5,
  version: '0.1.0',
} as const;

export type DeletedAgentResponse = '404' | 'empty';

function num(v: unknown, fallback: number): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? n : fallback;
}

export class AgentStore {
  private readonly records = new Map<string, AgentRecord>();
  private readonly log: ReportEntry[] = [];
  deletedAgentResponse: DeletedAgentResponse = '404';

  constructor(private readonly mgid: string) {}

  private create(agid: string): AgentRecord {
    const c = { ...DEFAULT_AGENT_CONFIG };
    const rec: AgentRecord = {
      agid,
      blacklist: [],
      code: 0,
      hostanme: '',
      maximum_rules: c.maximum_rules,
      mgid: this.mgid,
      plugin: '',
      score_threshold: c.score_threshold,
      sync_time: String(c.sync_time),
      ts: 0,
      config: c,
    };
    this.records.set(agid, rec);
    return rec;
  }

  /** Merges config values verbatim (creates the record if missing). */
  setConfig(agid: string, cfg: Readonly<Record<string, ConfigValue>>): void {
    const rec = this.records.get(agid) ?? this.create(agid);
    rec.config = { ...rec.config, ...cfg };
    if ('maximum_rules' in cfg && rec.ts === 0) rec.maximum_rules = num(cfg.maximum_rules, rec.maximum_rules);
    if ('score_threshold' in cfg && rec.ts === 0) rec.score_threshold = num(cfg.score_threshold, rec.score_threshold);
  }

  /** E8: the five string fields; integer fields become numbers. Validation happens before. */
  setConfigFromApi(agid: string, body: Readonly<Record<string, string>>): void {
    const cfg: Record<string, ConfigValue> = {};
    for (const [k, v] of Object.entries(body)) cfg[k] = k === 'running' || k === 'version' ? v : Number(v);
    this.setConfig(agid, cfg);
  }

  get(agid: string): AgentRecord | undefined {
    const r = this.records.get(agid);
    return r && structuredClone(r);
  }

  list(): AgentRecord[] {
    return [...this.records.values()].map((r) => structuredClone(r));
  }

  delete(agid: string): boolean {
    return this.records.delete(agid);
  }

  /** Logs a (validated) report and merges it only into an existing record. Returns 200 or 404. */
  report(agid: string, body: Record<string, unknown>, now: number): 200 | 404 {
    const rec = this.records.get(agid);
    if (rec) {
      for (const k of MERGED) if (k in body) (rec as unknown as Record<string, unknown>)[k] = structuredClone(body[k]);
    }
    const status = rec ? 200 : 404;
    this.log.push({ agid, body: structuredClone(body), at: now, status });
    return status;
  }

  get reports(): readonly ReportEntry[] {
    return this.log;
  }
}
