import { describe, expect, it } from 'vitest';
import { mergeHits, parseHitTotals } from '../../../../src/agent/state/hit-totals.js';
import { hitRows } from '../../../../src/agent/inspect/hits-report.js';
import { createScoring } from '../../../../src/score/decay.js';

describe('running totals of the hit counters', () => {
  it('never go back when the kernel counter is re-created, and keep addresses the kernel dropped', () => {
    let saved = parseHitTotals(undefined);
    let r = mergeHits(saved, [{ ip: '192.0.2.7', side: 'out', packets: 5, bytes: 300 }]);
    expect(r.totals).toEqual([{ ip: '192.0.2.7', side: 'out', packets: 5, bytes: 300 }]);
    saved = parseHitTotals(JSON.parse(JSON.stringify({ entries: r.next })));
    // The same kernel record grew: its value replaces the last one.
    r = mergeHits(saved, [{ ip: '192.0.2.7', side: 'out', packets: 8, bytes: 480 }]);
    expect(r.totals[0]).toMatchObject({ packets: 8, bytes: 480 });
    // Re-created (a flush, a rebuilt table): the kernel shows less, the total adds on.
    r = mergeHits(r.next, [{ ip: '192.0.2.7', side: 'out', packets: 2, bytes: 120 }]);
    expect(r.totals[0]).toMatchObject({ packets: 10, bytes: 600 });
    // Gone from the kernel: the total stays.
    r = mergeHits(r.next, []);
    expect(r.totals).toEqual([{ ip: '192.0.2.7', side: 'out', packets: 10, bytes: 600 }]);
  });

  it('ignores a saved file with unusable entries', () => {
    expect(parseHitTotals({ entries: { 'out 192.0.2.1': { basePackets: -1, baseBytes: 0, lastPackets: 0, lastBytes: 0 }, nonsense: {} } })).toEqual({});
  });

  it('groups addresses under the applied indicator covering them, most packets first, with reason, score and expiry', () => {
    const now = 1_800_000_000;
    const applied = {
      ts: now,
      plugin: 'nftables',
      entries: [
        { cidr: '198.51.100.0/24', reason: 'score' as const, expiresAt: now + 3600 },
        { cidr: '192.0.2.7', reason: 'manual' as const, expiresAt: null },
      ],
    };
    const rows = hitRows(
      [
        { ip: '198.51.100.1', side: 'out', packets: 3, bytes: 180 },
        { ip: '198.51.100.2', side: 'out', packets: 4, bytes: 240 },
        { ip: '192.0.2.7', side: 'in', packets: 2, bytes: 80 },
        { ip: '203.0.113.9', side: 'in', packets: 1, bytes: 40 },
      ],
      applied,
      undefined,
      createScoring({}, () => undefined),
      now,
    );
    expect(rows).toEqual([
      { ip: '198.51.100.0/24', direction: 'out', packets: 7, bytes: 420, reason: 'score', score: null, expires: now + 3600 },
      { ip: '192.0.2.7', direction: 'in', packets: 2, bytes: 80, reason: 'manual', score: null, expires: null },
      { ip: '203.0.113.9', direction: 'in', packets: 1, bytes: 40, reason: null, score: null, expires: null },
    ]);
  });
});
