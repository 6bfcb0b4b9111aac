import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { acceptFeedPage, feedPageSchema, stateReportJson } from '../../../src/api/wire.js';

const num = fc.oneof(fc.integer(), fc.double(), fc.nat(), fc.constantFrom(2 ** 53, 2 ** 53 - 1, -0, -1, 0.5));
const junk = fc.oneof(num, fc.string({ maxLength: 70 }), fc.boolean(), fc.constant(null), fc.array(fc.nat(), { maxLength: 2 }));
const item = fc.oneof(
  fc.record({ ip: fc.ipV4(), ts: fc.nat(), score: fc.double({ noNaN: true, noDefaultInfinity: true }), is_network: fc.boolean(), dec: num, delay: num }, { requiredKeys: ['ip', 'ts', 'score'] }),
  fc.record({ ip: fc.oneof(fc.ipV4(), junk), ts: fc.oneof(fc.nat(), junk), score: fc.oneof(num, junk), is_network: junk, dec: junk, delay: junk, extra: junk }, { requiredKeys: [] }),
  junk,
);
const page = fc.oneof(
  fc.record({ header: fc.oneof(fc.constant({}), fc.record({ eval: junk, version: junk, ts: junk }, { requiredKeys: [] }), junk), body: fc.oneof(fc.array(item, { maxLength: 5 }), junk) }, { requiredKeys: [] }),
  junk,
);

describe('acceptFeedPage (fast path of feedPageSchema)', () => {
  it('accepts nothing the schema rejects, and what it accepts reads the same', () => {
    let accepted = 0;
    fc.assert(
      fc.property(page, (p) => {
        const json = JSON.parse(JSON.stringify(p) ?? 'null') as unknown;
        const fast = acceptFeedPage(json);
        const zod = feedPageSchema.safeParse(json);
        if (fast !== undefined) {
          accepted++;
          expect(zod.success).toBe(true);
          expect(JSON.stringify(fast)).toBe(JSON.stringify(zod.data));
        }
      }),
      { numRuns: 3000 },
    );
    expect(accepted).toBeGreaterThan(0);
  });

  it('leaves to the schema what JSON can hold but the schema refuses', () => {
    for (const text of [
      '{"header":{},"body":[{"ip":"192.0.2.1","ts":1,"score":1e400}]}',
      '{"header":{},"body":[{"ip":"192.0.2.1","ts":9007199254740992,"score":1}]}',
      '{"header":{},"body":[{"ip":"192.0.2.1","ts":1.5,"score":1}]}',
      '{"header":{},"body":[{"ip":"192.0.2.1","ts":1,"score":1,"is_network":null}]}',
      '{"header":{},"body":[{"ip":"192.0.2.1","ts":1,"score":1,"dec":-1e400}]}',
      '{"header":{"version":"2"},"body":[]}',
      '{"header":{},"body":[["192.0.2.1",1,1]]}',
    ]) {
      expect(acceptFeedPage(JSON.parse(text))).toBeUndefined();
      expect(feedPageSchema.safeParse(JSON.parse(text)).success).toBe(false);
    }
    expect(acceptFeedPage({ header: { eval: 'x' }, body: [{ ip: '192.0.2.1', ts: 0, score: 5, info: {} }] })).toEqual({
      header: { eval: 'x' },
      body: [{ ip: '192.0.2.1', ts: 0, score: 5, info: {} }],
    });
  });
});

describe('stateReportJson (the state report written as bytes)', () => {
  const text = fc.string({ unit: 'binary', maxLength: 20 });
  const fields = fc.record({ agid: text, hostanme: text, plugin: text, code: fc.integer(), maximum_rules: fc.nat(), score_threshold: fc.nat(), sync_time: text, ts: fc.nat(), version: text });
  const networks = fc.array(fc.record({ start: fc.nat({ max: 2 ** 32 - 1 }), prefix: fc.integer({ min: 0, max: 32 }) }), { maxLength: 20 });
  const cidr = (n: { start: number; prefix: number }) => `${[24, 16, 8, 0].map((s) => (n.start >>> s) & 255).join('.')}${n.prefix === 32 ? '' : `/${n.prefix}`}`;

  it('reads back, as JSON, as the fields with the networks as texts: from columns and from texts alike (any text in the fields, quotes and control characters included)', () => {
    fc.assert(
      fc.property(fields, networks, (f, nets) => {
        const columns = { length: nets.length, starts: Uint32Array.from(nets, (n) => n.start), prefixes: Uint8Array.from(nets, (n) => n.prefix) };
        const expected = { ...f, blacklist: nets.map(cidr) };
        expect(JSON.parse(stateReportJson(f, columns).toString('utf8'))).toEqual(expected);
        expect(JSON.parse(stateReportJson(f, nets.map(cidr)).toString('utf8'))).toEqual(expected);
      }),
    );
  });

  it('writes a million networks into one buffer of their size', () => {
    const n = 1_000_000;
    const columns = { length: n, starts: new Uint32Array(n).map((_, i) => 0x0a000000 + i), prefixes: new Uint8Array(n).fill(32) };
    const body = stateReportJson({ agid: 'a', hostanme: 'h', plugin: 'ipset', code: 0, maximum_rules: n, score_threshold: 1, sync_time: '5', ts: 1, version: '0' }, columns);
    const parsed = JSON.parse(body.toString('latin1')) as { blacklist: string[] };
    expect(parsed.blacklist).toHaveLength(n);
    expect(parsed.blacklist[0]).toBe('10.0.0.0');
    expect(parsed.blacklist[n - 1]).toBe('10.15.66.63');
  });
});
