import * as z from '../config/zod.js';
import type { ApiClient } from './client.js';
import {
  AGENT_QUERY,
  IPS_QUERY,
  ROUTES,
  acceptFeedPage,
  agentListSchema,
  feedPageSchema,
  type AgentRecord,
  type FeedFilter,
  type FeedPage,
  type CidrList,
  type StateReportFields,
  stateReportJson,
  type StoredConfigBody,
} from './wire.js';

/** Body of POST /ips: an IPv4 report. Which fields are required is not shown; the CLI sends ip, confidence and decision. */
export interface IpReportBody {
  ip: string;
  confidence: number;
  /** -1 no decision (score-based), 0 whitelist, 1 block. */
  decision: -1 | 0 | 1;
  /** Epoch seconds in the future until which the decision holds. */
  ttl?: number;
  source?: string;
  notes?: string;
}

/** The API calls the agent and its admin commands make, one method per endpoint. */
export class ThreatIntelApi {
  constructor(readonly client: ApiClient) {}

  /** GET /version: health probe, no auth. The body is opaque. */
  async version(): Promise<{ body: unknown; date: string | undefined }> {
    const r = await this.client.call(ROUTES.version, z.unknown(), { auth: false });
    return { body: r.data, date: r.date };
  }

  /** POST /ips (admin): report an indicator or override its decision. No response body. Not retried: the operator sees the failure and re-runs. */
  async reportIndicator(body: IpReportBody): Promise<void> {
    await this.client.call(ROUTES.ips, null, { method: 'POST', body, retry: false });
  }

  /**
   * GET /ips: one page of the IPv4 feed. `conditional`: send the validators of the answer kept for
   * this URL, and take a 304 as that answer again. Only the decision polls between cycles ask for
   * it (small, asked again every poll); a cycle's pulls never do, so that a cache in front of the
   * API whose validators are wrong (a tag that never changes) cannot hold a cycle to an old answer.
   */
  async feedPage(filter: FeedFilter, ts: number, limit: number, options: { conditional?: boolean } = {}): Promise<FeedPage> {
    const r = await this.client.call(ROUTES.ips, feedPageSchema, {
      query: { [IPS_QUERY.limit]: limit, [IPS_QUERY.filter]: filter, [IPS_QUERY.ts]: ts, [IPS_QUERY.full]: 'no' },
      accept: acceptFeedPage,
      bulk: true,
      conditional: options.conditional === true,
    });
    // A 304 gives back the page kept from before, whose header `ts` is the server's clock of
    // then; the 304's Date header is its clock now (polls start from it: decision-cursor.ts).
    const date = r.notModified && r.date ? Math.floor(Date.parse(r.date) / 1000) : NaN;
    if (Number.isSafeInteger(date) && date > 0) return { ...r.data!, header: { ...r.data!.header, ts: String(date) } };
    return r.data!;
  }

  /** GET /feedback for one agent; `null` when the record was deleted (404 or empty array). */
  async agent(agid: string): Promise<AgentRecord | null> {
    const r = await this.client.call(ROUTES.feedback, agentListSchema, { query: { [AGENT_QUERY]: agid }, allowStatus: [404], conditional: true });
    if (r.status === 404 || !r.data) return null;
    return r.data.find((a) => a.agid === agid) ?? null;
  }

  /** GET /feedback without filter: every agent (admin). */
  async agents(): Promise<AgentRecord[]> {
    return (await this.client.call(ROUTES.feedback, agentListSchema)).data!;
  }

  /**
   * State report (the state report). Answers false when the server says the
   * record does not exist (404): the agent never re-creates a deleted record itself.
   */
  async report(fields: StateReportFields, blacklist: CidrList, options: { retry?: boolean } = {}): Promise<boolean> {
    const r = await this.client.call(ROUTES.feedback, null, {
      retry: options.retry ?? true,
      method: 'POST',
      query: { [AGENT_QUERY]: fields.agid },
      body: stateReportJson(fields, blacklist),
      allowStatus: [404],
      afterCycleDeadline: true,
    });
    return r.status !== 404;
  }

  /** POST /feedback/config (admin). */
  async storeConfig(agid: string, body: StoredConfigBody): Promise<void> {
    await this.client.call(ROUTES.feedbackConfig, null, { method: 'POST', query: { [AGENT_QUERY]: agid }, body, retry: false });
  }

  /** DELETE /feedback (admin). */
  async deleteAgent(agid: string): Promise<void> {
    await this.client.call(ROUTES.feedback, null, { method: 'DELETE', query: { [AGENT_QUERY]: agid }, retry: false });
  }
}

