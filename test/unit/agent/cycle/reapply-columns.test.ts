import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppliedColumns } from '../../../../src/agent/state/applied-columns.js';
import type { AppliedEntry } from '../../../../src/agent/state/applied-entry.js';
import { keepUnprotected } from '../../../../src/agent/cycle/reapply.js';
import { restoreWithOverrides } from '../../../../src/agent/cycle/overrides-apply.js';
import type { AgentConfig } from '../../../../src/config/load.js';
import { appliedColumnsOf, appliedEntriesOf } from '../../../helpers/applied-columns.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { fromNumber, mustParseCidr } from '../../../../src/net/ipv4.js';
import { ProtectedSet, filterProtected } from '../../../../src/policy/protect.js';

/**
 * The restore and the re-assert read the last applied set as columns (a million objects cost
 * a restart ~900 MB). These check the columns' filter against the objects' one it replaces:
 * the same entries kept, the same removed and named by the same member.
 */
const NOW = 1_800_000_000;
const set = new ProtectedSet([
  { cidr: mustParseCidr('198.51.100.0/24', 'test'), source: 'allowlist' },
  { cidr: mustParseCidr('203.0.113.53', 'test'), source: 'resolver', detail: '/etc/resolv.conf' },
]);

describe('the last applied set on columns', () => {
  it('keeps what is live and not protected, removes what the protected set holds (naming the member), drops what has expired', () => {
    const entries: AppliedEntry[] = [
      { cidr: '198.51.100.7', reason: 'score', expiresAt: NOW + 60 },
      { cidr: '203.0.113.0/24', reason: 'manual', expiresAt: null },
      { cidr: '192.0.2.1', reason: 'score', expiresAt: NOW },
      { cidr: '192.0.2.2', reason: 'url', expiresAt: NOW + 1 },
      { cidr: '10.0.0.0/8', reason: 'local', expiresAt: null },
    ];
    const { kept, removed } = keepUnprotected(appliedColumnsOf(entries), set, NOW);
    expect(appliedEntriesOf(kept)).toEqual([
      { cidr: '192.0.2.2', reason: 'url', expiresAt: NOW + 1 },
      { cidr: '10.0.0.0/8', reason: 'local', expiresAt: null },
    ]);
    expect(removed.map((r) => [r.entry.cidr, r.member.source])).toEqual([
      ['198.51.100.7', 'allowlist'],
      ['203.0.113.0/24', 'resolver'],
    ]);
  });

  it('property: the same split as the objects filter the restore used before', () => {
    const entry = fc.record({ start: fc.nat({ max: 0xffffffff }), prefix: fc.integer({ min: 8, max: 32 }), expires: fc.option(fc.integer({ min: NOW - 100, max: NOW + 100 }), { nil: null }) });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 60 }), fc.array(fc.tuple(fc.nat({ max: 0xffffffff }), fc.integer({ min: 8, max: 32 })), { maxLength: 5 }), (raw, members) => {
        const protectedSet = new ProtectedSet(members.map(([s, p]) => ({ cidr: fromNumber(s, p), source: 'allowlist' as const })));
        const entries: AppliedEntry[] = raw.map((e) => ({ cidr: fromNumber(e.start, e.prefix).text, reason: 'score', expiresAt: e.expires }));
        const live = entries.filter((e) => e.expiresAt === null || e.expiresAt > NOW);
        const before = filterProtected(live, protectedSet, (e) => mustParseCidr(e.cidr, 'test'));
        const after = keepUnprotected(appliedColumnsOf(entries), protectedSet, NOW);
        expect(appliedEntriesOf(after.kept)).toEqual(before.kept);
        expect(after.removed.map((r) => [r.entry, r.member.cidr.text])).toEqual(before.removed.map((r) => [r.entry, r.member.cidr.text]));
      }),
    );
  });

  it('the restore without an override in force: the record\'s local blocks left out, capped at maximum_rules, in order', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-restore-'));
    try {
      const kept = appliedColumnsOf([
        { cidr: '192.0.2.1', reason: 'manual', expiresAt: null },
        { cidr: '192.0.2.2', reason: 'local', expiresAt: null },
        { cidr: '192.0.2.3', reason: 'score', expiresAt: NOW + 60 },
        { cidr: '192.0.2.4', reason: 'score', expiresAt: NOW + 30 },
      ]);
      const ctx = { config: { state_dir: dir, min_prefix: 8 } as AgentConfig, protectedSet: set, now: NOW, logger: pino({ level: 'silent' }) };
      expect(appliedEntriesOf(restoreWithOverrides(kept, { ...ctx, maximumRules: 10 }))).toEqual([
        { cidr: '192.0.2.1', reason: 'manual', expiresAt: null },
        { cidr: '192.0.2.3', reason: 'score', expiresAt: NOW + 60 },
        { cidr: '192.0.2.4', reason: 'score', expiresAt: NOW + 30 },
      ]);
      expect(appliedEntriesOf(restoreWithOverrides(kept, { ...ctx, maximumRules: 2 })).map((e) => e.cidr)).toEqual(['192.0.2.1', '192.0.2.3']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the columns grow past the capacity they were made with', () => {
    const cols = new AppliedColumns(1);
    for (let i = 0; i < 100; i++) cols.push(i << 8, 24, 'score', i);
    expect(cols.length).toBe(100);
    expect(cols.entry(99)).toEqual({ cidr: fromNumber(99 << 8, 24).text, reason: 'score', expiresAt: 99 });
  });
});
