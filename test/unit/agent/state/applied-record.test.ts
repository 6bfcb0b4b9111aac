import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import fc from 'fast-check';
import { StateStore, type AppliedSet } from '../../../../src/agent/state/store.js';
import { AppliedColumns, liveColumns } from '../../../../src/agent/state/applied-columns.js';
import { encodeAppliedRecord } from '../../../../src/agent/state/applied-record.js';
import { fromNumber } from '../../../../src/net/ipv4.js';
import { appliedEntriesOf } from '../../../helpers/applied-columns.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function store(): { s: StateStore; dir: string; log: () => string } {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-applied-'));
  dirs.push(dir);
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (t: string) => lines.push(t) });
  return { s: new StateStore(dir, logger), dir, log: () => lines.join('') };
}

const SET: AppliedSet = {
  ts: 1_790_000_000,
  plugin: 'nftables',
  entries: Array.from({ length: 10_000 }, (_, i) => ({
    cidr: i % 7 === 0 ? `10.${(i >> 8) & 255}.${i & 255}.0/24` : `198.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`,
    reason: (['score', 'manual', 'url', 'local'] as const)[i % 4]!,
    expiresAt: i % 3 === 0 ? null : 1_790_000_000 + i,
  })),
};

describe('the applied-set record', () => {
  it('restores exactly what was saved, and the file is one JSON document any tool reads', () => {
    const { s, dir } = store();
    s.saveApplied(SET);
    expect(s.loadApplied('nftables')).toEqual(SET);
    const text = readFileSync(join(dir, 'applied-nftables.json'), 'utf8');
    expect(JSON.parse(text)).toEqual(SET);
    // One entry per line: read a line at a time, never as one string.
    expect(text.split('\n').length).toBe(SET.entries.length + 3);
  });

  it('an empty set round-trips', () => {
    const { s } = store();
    s.saveApplied({ ts: 5, plugin: 'nftables', entries: [] });
    expect(s.loadApplied('nftables')).toEqual({ ts: 5, plugin: 'nftables', entries: [] });
  });

  it('restores a record written by an older agent as one line of JSON (an upgrade keeps the set)', () => {
    const { s, dir } = store();
    writeFileSync(join(dir, 'applied-nftables.json'), JSON.stringify(SET));
    expect(s.loadApplied('nftables')).toEqual(SET);
  });

  it('reads entry lines edited by hand (other spacing) as JSON', () => {
    const { s, dir } = store();
    writeFileSync(join(dir, 'applied-nftables.json'), '{"ts":3,"plugin":"nftables","entries":[\n{ "cidr": "203.0.113.9/32", "reason": "manual", "expiresAt": null },\n{"cidr":"203.0.113.10/32","reason":"score","expiresAt":12}\n]}\n');
    expect(s.loadApplied('nftables')?.entries).toEqual([
      { cidr: '203.0.113.9/32', reason: 'manual', expiresAt: null },
      { cidr: '203.0.113.10/32', reason: 'score', expiresAt: 12 },
    ]);
  });

  it.each([
    ['cut off mid-file', (t: string) => t.slice(0, Math.floor(t.length / 2))],
    ['a comma missing between entries', (t: string) => t.replace(',\n', '\n')],
    ['a broken entry line', (t: string) => t.replace('"reason":"manual"', '"reason":manual')],
    ['text after the end', (t: string) => `${t}{"more":1}\n`],
  ])('a record %s is set aside and nothing is restored from it', (_name, damage) => {
    const { s, dir, log } = store();
    s.saveApplied(SET);
    const path = join(dir, 'applied-nftables.json');
    writeFileSync(path, damage(readFileSync(path, 'utf8')));
    expect(s.loadApplied('nftables')).toBeUndefined();
    expect(log()).toMatch(/not valid JSON; set aside/);
    expect(readdirSync(dir).some((f) => f.startsWith('applied-nftables.json.corrupt-'))).toBe(true);
  });
});

describe('the record written from a cycle’s columns', () => {
  it('is byte for byte the record written from the same entries as objects', () => {
    const reasons = ['score', 'manual', 'url', 'local'] as const;
    const arb = fc.array(
      fc.record({
        cidr: fc.tuple(fc.nat(0xffffffff), fc.integer({ min: 0, max: 32 })).map(([v, p]) => fromNumber(v, p)),
        reason: fc.constantFrom(...reasons),
        expiresAt: fc.option(fc.oneof(fc.integer({ min: 0, max: 4_000_000_000 }), fc.double({ min: 1, max: 4e9, noNaN: true })), { nil: null }),
      }),
      { maxLength: 50 },
    );
    fc.assert(
      fc.property(arb, (list) => {
        const cols = new AppliedColumns(list.length);
        for (const e of list) cols.push(e.cidr.start, e.cidr.prefix, e.reason, e.expiresAt);
        const objects = list.map((e) => ({ cidr: e.cidr.text, reason: e.reason, expiresAt: e.expiresAt }));
        const bytes = (chunks: Iterable<Buffer>) => Buffer.concat([...chunks]).toString('utf8');
        expect(bytes(encodeAppliedRecord(1_700_000_000, 'ipset', cols))).toBe(bytes(encodeAppliedRecord(1_700_000_000, 'ipset', objects)));
        expect(Array.from({ length: cols.length }, (_, i) => cols.text(i))).toEqual(objects.map((o) => o.cidr));
      }),
    );
  });
});

describe('the applied record’s count (the shrink guard’s)', () => {
  it('follows the file: its own writes, another process’s writes, and a removed record', () => {
    const { s, dir } = store();
    const other = new StateStore(dir, pino({ level: 'silent' }));
    const entries = (n: number) => Array.from({ length: n }, (_, i) => ({ cidr: `192.0.2.${i}`, reason: 'score' as const, expiresAt: null }));
    expect(s.appliedCount('ipset')).toBeUndefined();
    expect(s.hasApplied('ipset')).toBe(false);
    s.saveApplied({ ts: 1, plugin: 'ipset', entries: entries(5) });
    expect(s.appliedCount('ipset')).toBe(5);
    expect(other.appliedCount('ipset')).toBe(5); // read from the file
    other.saveApplied({ ts: 2, plugin: 'ipset', entries: entries(3) }); // a manual sync
    expect(s.appliedCount('ipset')).toBe(3);
    rmSync(join(dir, 'applied-ipset.json'));
    expect(s.appliedCount('ipset')).toBeUndefined();
    expect(s.hasApplied('ipset')).toBe(false);
  });

  describe('read as columns (the restore and the re-assert)', () => {
    const asEntries = (r: { columns: AppliedColumns } | undefined) => (r ? appliedEntriesOf(r.columns) : undefined)?.map((e) => ({ ...e, cidr: e.cidr.includes('/') ? e.cidr : `${e.cidr}/32` }));
    it('gives what the objects reader gives: the written layout, an older agent\'s one line, lines edited by hand', () => {
      const { s, dir } = store();
      s.saveApplied(SET);
      expect(s.loadAppliedColumns('nftables')?.ts).toBe(SET.ts);
      expect(asEntries(s.loadAppliedColumns('nftables'))).toEqual(SET.entries);
      writeFileSync(join(dir, 'applied-nftables.json'), JSON.stringify(SET));
      expect(asEntries(s.loadAppliedColumns('nftables'))).toEqual(SET.entries);
      writeFileSync(join(dir, 'applied-nftables.json'), '{"ts":3,"plugin":"nftables","entries":[\n{ "cidr": "203.0.113.9/32", "reason": "manual", "expiresAt": null },\n{"cidr":"203.0.113.10/32","reason":"score","expiresAt":12}\n]}\n');
      expect(asEntries(s.loadAppliedColumns('nftables'))).toEqual(s.loadApplied('nftables')!.entries);
    });

    it('leaves out the entries the objects reader leaves out, and a damaged record is set aside as before', () => {
      const { s, dir, log } = store();
      const path = join(dir, 'applied-nftables.json');
      writeFileSync(path, JSON.stringify({ ts: 4, plugin: 'nftables', entries: [{ cidr: '203.0.113.1/32', reason: 'score', expiresAt: 9 }, { cidr: 'nope', reason: 'score', expiresAt: 9 }, { cidr: '203.0.113.2/32', reason: 'manual', expiresAt: 'soon' }, null, 7] }));
      expect(asEntries(s.loadAppliedColumns('nftables'))).toEqual([{ cidr: '203.0.113.1/32', reason: 'score', expiresAt: 9 }]);
      expect(asEntries(s.loadAppliedColumns('nftables'))).toEqual(s.loadApplied('nftables')!.entries);
      writeFileSync(path, '[1,2]');
      expect(s.loadAppliedColumns('nftables')).toBeUndefined();
      expect(log()).toMatch(/unknown format; ignored/);
      s.saveApplied(SET);
      writeFileSync(path, readFileSync(path, 'utf8').replace('"reason":"manual"', '"reason":manual'));
      expect(s.loadAppliedColumns('nftables')).toBeUndefined();
      expect(readdirSync(dir).some((f) => f.startsWith('applied-nftables.json.corrupt-'))).toBe(true);
    });
  });
});

describe('liveColumns (what a failed cycle reports as still applied)', () => {
  it('keeps the entries not expired by now, permanent ones included, with their reason and score; drops the rest', () => {
    const c = new AppliedColumns(4);
    c.push(fromNumber(0x0a000001, 32).start, 32, 'manual', null, null);
    c.push(fromNumber(0x0a000002, 32).start, 32, 'score', 1_000, 7.5);
    c.push(fromNumber(0x0a000100, 24).start, 24, 'url', 1_001, null);
    c.push(fromNumber(0x0a000003, 32).start, 32, 'local', 999, null);
    const live = liveColumns(c, 1_000);
    expect(Array.from({ length: live.length }, (_, i) => [live.text(i), live.reason(i), live.expiresAt(i), live.score(i)])).toEqual([
      ['10.0.0.1', 'manual', null, null],
      ['10.0.1.0/24', 'url', 1_001, null],
    ]);
    expect(liveColumns(undefined, 1_000).length).toBe(0);
  });
});
