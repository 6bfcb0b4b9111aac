import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import pino from 'pino';
import { parseConfig } from '../../../src/config/load.js';
import { ApiClient } from '../../../src/api/client.js';
import { ThreatIntelApi } from '../../../src/api/threat-intel.js';
import { StateStore } from '../../../src/agent/state/store.js';
import { runCycle } from '../../../src/agent/cycle/cycle.js';
import { WcfError } from '../../../src/errors.js';
import { RecordingPlugin } from '../../helpers/recording-plugin.js';

/**
 * "Never an applied change": one whole cycle (runCycle) against a loopback
 * server answering arbitrary bytes, JSON, statuses and half-valid pages. When
 * the configuration call or any page of the pull fails, the firewall plugin is
 * never called (neither apply nor flush) and the last applied set on disk is
 * unchanged; whatever happens, the cycle ends with a classified error, never
 * a crash.
 */

const logger = pino({ level: 'silent' });
// Failures of the API calls, and a record the API does not have at first contact (an empty agent-record answer).
const API_ERRORS = new Set(['WCF_ERR_API_UNREACHABLE', 'WCF_ERR_API_AUTH', 'WCF_ERR_API_STATUS', 'WCF_ERR_API_RESPONSE', 'WCF_ERR_AGENT_UNKNOWN']);
const PAGE = 5;
const GOOD_AGENT = JSON.stringify([{ agid: 'fz', config: { maximum_rules: '50', score_threshold: '1', sync_time: '5', running: 'true' } }]);
const EMPTY_PAGE = JSON.stringify({ header: {}, body: [] });

interface Answer {
  status: number;
  body: Buffer;
}

let server: Server;
let base = '';
let agentAnswer: Answer = { status: 200, body: Buffer.from(GOOD_AGENT) };
let ipsAnswers: Answer[] = [];
let ipsRequests = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    let a: Answer = { status: 200, body: Buffer.from('{}') };
    if (req.method === 'GET' && url.pathname === '/api/v1/feedback') a = agentAnswer;
    else if (req.method === 'GET' && url.pathname === '/api/v1/ips') {
      ipsRequests++;
      a = ipsAnswers.shift() ?? { status: 200, body: Buffer.from(EMPTY_PAGE) };
    }
    req.resume();
    req.on('end', () => {
      res.writeHead(a.status, { 'content-type': 'application/json' });
      res.end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const validItem = fc.record({ ip: fc.ipV4(), ts: fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }), score: fc.double({ min: 0, max: 10, noNaN: true }) });
const arbBody: fc.Arbitrary<Buffer> = fc.oneof(
  // bytes
  fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
  // any JSON
  fc.jsonValue().map(json),
  // page-shaped, arbitrary items
  fc.record({ header: fc.jsonValue(), body: fc.array(fc.record({ ip: fc.string(), ts: fc.jsonValue(), score: fc.jsonValue() }), { maxLength: PAGE }) }).map(json),
  // a valid page (full ones make the agent ask for the next page)
  fc.array(validItem, { minLength: 0, maxLength: PAGE }).map((body) => json({ header: {}, body })),
  // a valid page cut short
  fc.tuple(fc.array(validItem, { minLength: 1, maxLength: PAGE }), fc.double({ min: 0, max: 1, noNaN: true })).map(([body, cut]) => {
    const text = JSON.stringify({ header: {}, body });
    return Buffer.from(text.slice(0, Math.floor(text.length * cut)));
  }),
);
const arbStatus = fc.oneof({ weight: 6, arbitrary: fc.constant(200) }, { weight: 1, arbitrary: fc.constantFrom(401, 403, 404, 429, 500, 502) });
const arbAnyAnswer: fc.Arbitrary<Answer> = fc.record({ status: arbStatus, body: arbBody });
const arbValidPage: fc.Arbitrary<Answer> = fc.array(validItem, { maxLength: PAGE }).map((body) => ({ status: 200, body: json({ header: {}, body }) }));
// Valid pages often enough that whole pulls come through too (then a partial failure is a later page).
const arbAnswer: fc.Arbitrary<Answer> = fc.oneof({ weight: 2, arbitrary: arbAnyAnswer }, { weight: 3, arbitrary: arbValidPage });
const arbAgent: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ status: 200, body: Buffer.from(GOOD_AGENT) }) },
  { weight: 1, arbitrary: arbAnyAnswer },
);

// Addresses no machine running the tests protects (192.0.2.1 is a gateway on some: it would leave the set).
const PREVIOUS = {
  ts: 1_790_000_000,
  plugin: 'dry-run',
  entries: [
    { cidr: '203.0.113.1', reason: 'manual' as const, expiresAt: null },
    { cidr: '198.51.100.0/24', reason: 'manual' as const, expiresAt: null },
  ],
};

describe('runCycle under arbitrary API answers', () => {
  it('never applies or flushes anything when the configuration call or the pull fails', async () => {
    const root = mkdtempSync(join(tmpdir(), 'wcf-fuzz-cycle-'));
    let run = 0;
    let pullFailures = 0;
    let pullsThrough = 0;
    try {
      await fc.assert(
        fc.asyncProperty(arbAgent, fc.array(arbAnswer, { minLength: 1, maxLength: 5 }), async (agent, pages) => {
          const dir = join(root, String(run++));
          const config = parseConfig(
            JSON.stringify({ agid: 'fz', base_url: base, token: 't', plugin: 'dry-run', state_dir: dir, retries: 0, page_size: PAGE, request_timeout_ms: 2000 }),
            join(root, 'config.json'),
          );
          const state = new StateStore(dir, logger);
          state.saveApplied(PREVIOUS);
          const api = new ThreatIntelApi(
            new ApiClient({ baseUrl: base, token: 't', authScheme: 'bearer', connectTimeoutMs: 1000, requestTimeoutMs: 2000, retries: 0, maxResponseBytes: 1 << 20, userAgent: 'fuzz', logger }),
          );
          agentAnswer = agent;
          ipsAnswers = [...pages];
          ipsRequests = 0;
          const plugin = new RecordingPlugin();
          try {
            const outcome = await runCycle({ config, api, state, logger }, plugin);
            const err = outcome.error;
            // Never a crash: every failure is one of the documented classes.
            if (err) expect(err, String(err)).toBeInstanceOf(WcfError);
            expect(outcome.record.code).not.toBe(1);
            if (err instanceof WcfError && API_ERRORS.has(err.code)) {
              pullFailures++;
              expect(plugin.changes, `${err.code}: ${err.message}`).toBe(0);
              expect(state.loadApplied('dry-run')).toEqual(PREVIOUS);
              expect(outcome.record.ok).toBe(false);
              expect(outcome.record.applied).toBe(PREVIOUS.entries.length);
            } else if (err instanceof WcfError && err.code === 'WCF_ERR_GUARD') {
              expect(plugin.changes).toBe(0);
              expect(state.loadApplied('dry-run')).toEqual(PREVIOUS);
            } else {
              // The pull came through: exactly one change, and what was applied is what is saved.
              pullsThrough++;
              expect(plugin.changes).toBe(1);
              const saved = state.loadApplied('dry-run')!.entries.map((e) => e.cidr).sort();
              expect(saved).toEqual(await plugin.list());
            }
          } finally {
            await api.client.close();
            rmSync(dir, { recursive: true, force: true });
          }
        }),
        { numRuns: 200 },
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
    // The property must have exercised the failing paths, not only lucky pulls.
    expect(pullFailures).toBeGreaterThan(50);
    expect(pullsThrough).toBeGreaterThan(5);
  });
});
