import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import pino from 'pino';
import { parseConfig } from '../../../src/config/load.js';
import { ConfigError, WcfError } from '../../../src/errors.js';
import { ApiClient } from '../../../src/api/client.js';
import { ThreatIntelApi } from '../../../src/api/threat-intel.js';
import { feedPageSchema } from '../../../src/api/wire.js';
import { pullFeed } from '../../../src/feed/pull.js';
import { resolveSettings } from '../../../src/config/server.js';
import { LOCAL_DEFAULT_SOURCES } from '../../../src/config/server.js';

const logger = pino({ level: 'silent' });

describe('config parser under arbitrary input', () => {
  it('throws only ConfigError, whatever the text', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify(v))), (text) => {
        try {
          parseConfig(text, '/fuzz.json');
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('throws only ConfigError for objects with the right keys and arbitrary values', () => {
    const keys = ['agid', 'base_url', 'token', 'plugin', 'allowlist', 'min_prefix', 'set_name', 'maximum_rules', 'hook_chains', 'score_threshold'];
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...keys), fc.jsonValue()), (obj) => {
        try {
          parseConfig(JSON.stringify(obj), '/fuzz.json');
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('stored-configuration parser under arbitrary input', () => {
  it('never throws and always yields valid settings', () => {
    const prev = { maximum_rules: 10, score_threshold: 3, sync_time: 15, running: true, version: null };
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('maximum_rules', 'score_threshold', 'sync_time', 'running', 'version'), fc.jsonValue()), (raw) => {
        const { settings } = resolveSettings(raw, prev, LOCAL_DEFAULT_SOURCES);
        for (const k of ['maximum_rules', 'score_threshold', 'sync_time'] as const) {
          expect(Number.isSafeInteger(settings[k]) && settings[k] >= 1).toBe(true);
        }
        expect(typeof settings.running).toBe('boolean');
      }),
      { numRuns: 1000 },
    );
  });
});

describe('feed parsing under arbitrary bodies', () => {
  it('the page schema never throws on arbitrary JSON', () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => void feedPageSchema.safeParse(v)), { numRuns: 2000 });
  });

  // A real HTTP server on loopback answering whatever bytes fast-check makes up.
  let server: Server;
  let body: Buffer = Buffer.alloc(0);
  let base = '';
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  it('a pull over arbitrary bytes or JSON either yields valid indicators or a WcfError, never a crash', async () => {
    const api = new ThreatIntelApi(
      new ApiClient({ baseUrl: base, token: 't', authScheme: 'bearer', connectTimeoutMs: 1000, requestTimeoutMs: 2000, retries: 0, maxResponseBytes: 1 << 20, userAgent: 'fuzz', logger }),
    );
    const arbBody = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v))),
      fc
        .record({ header: fc.jsonValue(), body: fc.array(fc.record({ ip: fc.string(), ts: fc.jsonValue(), score: fc.jsonValue() }), { maxLength: 5 }) })
        .map((v) => Buffer.from(JSON.stringify(v))),
      fc
        .array(fc.record({ ip: fc.oneof(fc.ipV4(), fc.string()), ts: fc.nat(), score: fc.double() }), { maxLength: 5 })
        .map((items) => Buffer.from(JSON.stringify({ header: {}, body: items }))),
    );
    await fc.assert(
      fc.asyncProperty(arbBody, async (b) => {
        body = b;
        try {
          const r = await pullFeed(api, { filter: 0, fromTs: 0, pageSize: 1000, logger });
          for (const ind of r.items.values()) {
            expect(Number.isFinite(ind.score)).toBe(true);
            expect(ind.cidr.start).toBeGreaterThanOrEqual(0);
          }
        } catch (err) {
          expect(err).toBeInstanceOf(WcfError);
        }
      }),
      { numRuns: 300 },
    );
    await api.client.close();
  });
});
