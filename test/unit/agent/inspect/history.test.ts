import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { historyOf, stateAt, verdictAt, type Target } from '../../../../src/agent/inspect/history.js';
import { REASON_CODE } from '../../../../src/agent/state/history/codes.js';
import { encodeBlock } from '../../../../src/agent/state/history/block.js';
import { EventColumns } from '../../../../src/agent/state/history/events.js';
import { HistoryWriter } from '../../../../src/agent/state/history/files.js';
import type { HistoryEvent } from '../../../../src/agent/state/history/events.js';
import { parseCidr } from '../../../../src/net/ipv4.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const ev = (ts: number, change: HistoryEvent['change'], reason: HistoryEvent['reason'], extra: Partial<HistoryEvent> = {}): HistoryEvent => ({
  ts,
  entry: '203.0.113.9',
  change,
  reason,
  score: null,
  rank: null,
  cause: 'cycle',
  ...extra,
});
const addr = (t: string): Target => {
  const r = parseCidr(t);
  if (!r.ok) throw new Error(t);
  return { kind: 'addresses', cidr: r.cidr };
};

describe('an entry replayed to a moment', () => {
  const events = [ev(100, 'added', 'score', { expires: 500 }), ev(200, 'updated', 'manual', { expires: null }), ev(300, 'removed', 'whitelisted', { cause: 'poll' })];

  it('in force from its addition, for the reason in force then, and out after its removal', () => {
    expect(stateAt('x', events, 99).inForce).toBe(false);
    expect(stateAt('x', events, 150)).toMatchObject({ inForce: true, reason: 'score', since: 100 });
    expect(stateAt('x', events, 250)).toMatchObject({ inForce: true, reason: 'manual', since: 100 });
    expect(stateAt('x', events, 300)).toMatchObject({ inForce: false, reason: 'whitelisted', since: 300, cause: 'poll' });
  });

  it('out once its kernel timeout ran out, before any write recorded it', () => {
    expect(stateAt('x', [ev(100, 'added', 'score', { expires: 500 })], 600)).toMatchObject({ inForce: false, reason: 'expired', since: 500, cause: 'expiry' });
  });

  it('before its first kept change, what that change found: in force for a removal (since before the history)', () => {
    const st = stateAt('x', [ev(300, 'removed', 'below_threshold', { previous: { reason: 'manual', expires: null } })], 250);
    expect(st).toMatchObject({ inForce: true, reason: 'manual', since: null });
  });
});

describe('the verdict at a moment', () => {
  function history(blocks: [number, EventColumns][]): string {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-verdict-'));
    dirs.push(dir);
    const w = new HistoryWriter(dir, 1 << 20);
    for (const [ts, e] of blocks) w.append(encodeBlock({ kind: 'addresses', cause: 'cycle', ts, plugin: 'nftables' }, e));
    return dir;
  }
  const batch = (f: (e: EventColumns) => void) => {
    const e = new EventColumns('addresses');
    f(e);
    return e;
  };
  const net = (t: string) => {
    const c = (addr(t) as { cidr: { start: number; prefix: number } }).cidr;
    return { start: c.start, prefix: c.prefix };
  };
  const dir = () =>
    history([
      [100, batch((e) => e.push(net('203.0.113.0/24'), { ts: 100, change: 'added', reason: 'manual', expires: null }))],
      [200, batch((e) => e.push(net('203.0.113.9'), { ts: 200, change: 'added', reason: 'score', score: 8, rank: 4, expires: 10_000 }))],
      [300, batch((e) => e.push(net('203.0.113.0/24'), { ts: 300, change: 'removed', reason: 'manual_withdrawn', prev: 'manual', prevExpires: null }))],
      [400, batch((e) => e.push(net('203.0.113.9'), { ts: 400, change: 'removed', reason: 'whitelisted', prev: 'score', prevExpires: 10_000 }))],
    ]);

  it('an address is blocked while a network covering it is, and says which', async () => {
    const d = dir();
    const at = (t: number) => verdictAt(d, addr('203.0.113.9'), t, async () => []);
    expect(await at(150)).toMatchObject({ blocked: true, by: { entry: '203.0.113.0/24', reason: 'manual' } });
    expect(await at(350)).toMatchObject({ blocked: true, by: { entry: '203.0.113.9', reason: 'score', since: 200, rank: 4 } });
    expect(await at(450)).toMatchObject({ blocked: false, lastChange: { ts: 400, reason: 'whitelisted' } });
  });

  it('a network: the addresses inside it are listed, but only an entry holding all of it blocks it', async () => {
    const v = await verdictAt(dir(), addr('203.0.113.0/24'), 350, async () => []);
    expect(v.blocked).toBe(false);
    expect(v.entries.find((s) => s.entry === '203.0.113.9')).toMatchObject({ inForce: true, covers: false });
  });

  it('before the oldest change kept: unknown, and the history says where it begins', async () => {
    expect(await verdictAt(dir(), addr('203.0.113.9'), 50, async () => [])).toMatchObject({ blocked: null, from: 100 });
  });

  it('a first change stamped a second before its block (a cycle that began at 99 and wrote at 100): at 99 the history knows it', async () => {
    const d = history([[100, batch((e) => e.push(net('203.0.113.9'), { ts: 99, change: 'added', reason: 'score', score: 8, rank: 1, expires: 10_000 }))]]);
    expect(await verdictAt(d, addr('203.0.113.9'), 99, async () => [])).toMatchObject({ blocked: true, from: 99, by: { entry: '203.0.113.9', since: 99 } });
    expect(await verdictAt(d, addr('203.0.113.9'), 98, async () => [])).toMatchObject({ blocked: null, from: 99 });
  });

  it('a later block stamped a second earlier (a cycle’s names written after its addresses): the history begins at the earlier', async () => {
    const d = mkdtempSync(join(tmpdir(), 'wcf-verdict-'));
    dirs.push(d);
    const w = new HistoryWriter(d, 1 << 20);
    w.append(encodeBlock({ kind: 'addresses', cause: 'cycle', ts: 101, plugin: 'dry-run' }, batch((e) => e.push(net('198.51.100.7'), { ts: 101, change: 'added', reason: 'score' }))));
    const names = new EventColumns('names');
    names.push('evil.example', { ts: 100, change: 'added', reason: 'score', score: 9, rank: 1 });
    w.append(encodeBlock({ kind: 'names', cause: 'cycle', ts: 100, plugin: 'dry-run' }, names));
    const v = await verdictAt(d, { kind: 'names', name: 'login.evil.example' }, 100, async () => []);
    expect(v).toMatchObject({ blocked: true, from: 100, by: { entry: 'evil.example' } });
  });

  it('an entry in force now with no change kept has been in force since before the history', async () => {
    const v = await verdictAt(dir(), addr('198.51.100.1'), 150, async () => [{ entry: '198.51.100.1', reason: 'manual', expires: null }]);
    expect(v).toMatchObject({ blocked: true, by: { entry: '198.51.100.1', since: null } });
  });

  it('a note (a repair) concerns the entries in force when it was written, by its place in the history within one second', () => {
    const d = mkdtempSync(join(tmpdir(), 'wcf-notes-'));
    dirs.push(d);
    const w = new HistoryWriter(d, 1 << 20);
    const one = (change: 'added' | 'removed', reason: 'manual' | 'flushed') => batch((e) => e.push(net('203.0.113.9'), { ts: 100, change, reason }));
    const note = (text: string) => encodeBlock({ kind: 'note', cause: 'repair', ts: 100, plugin: 'nftables', noteReason: REASON_CODE.repaired, note: text });
    w.append(note('before it came'));
    w.append(encodeBlock({ kind: 'addresses', cause: 'poll', ts: 100, plugin: 'nftables' }, one('added', 'manual')));
    w.append(note('while it was in force'));
    w.append(encodeBlock({ kind: 'addresses', cause: 'flush', ts: 100, plugin: 'nftables' }, one('removed', 'flushed')));
    w.append(note('after it left'));
    expect(historyOf(d, addr('203.0.113.9')).relevantNotes.map((n) => n.text)).toEqual(['while it was in force']);
  });

  it('--since and --until keep the changes between them, both ends included', () => {
    const d = dir();
    const ts = (range: { since?: number; until?: number }) => historyOf(d, addr('203.0.113.9'), range).events.map((e) => e.ts);
    expect(ts({})).toEqual([100, 200, 300, 400]);
    expect(ts({ since: 200, until: 300 })).toEqual([200, 300]);
    expect(ts({ since: 301 })).toEqual([400]);
  });
});
