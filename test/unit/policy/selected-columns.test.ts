import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { AgentConfig } from '../../../src/config/load.js';
import { selectionWithOverrides } from '../../../src/agent/cycle/overrides-apply.js';
import { saveOverrides } from '../../../src/agent/state/overrides-store.js';
import { mustParseCidr } from '../../../src/net/ipv4.js';
import { ProtectedSet } from '../../../src/policy/protect.js';
import { selectEntries } from '../../../src/policy/select.js';
import type { Selection } from '../../../src/policy/selected-columns.js';
import { SelectedColumns, selectionOf } from '../../../src/policy/selected-columns.js';
import { createScoring } from '../../../src/score/decay.js';
import type { Indicator } from '../../../src/feed/indicator.js';

const NOW = 1_800_000_000;
const scoring = createScoring({});
const ind = (n: number, score: number): Indicator => ({ cidr: mustParseCidr(`198.51.${n >> 8}.${n & 255}`, 'test'), score, ts: NOW - 60 });
const plain = (s: Selection) => s.entries.map((e) => [e.cidr.text, e.reason, e.score, e.expiresAt]);
const noLogs = { warn: () => undefined, info: () => undefined, debug: () => undefined, error: () => undefined } as never;

describe('the selection as columns', () => {
  it('holds the selected entries in selection order; the entries made from it are the same ones', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2000 }), fc.double({ min: 0, max: 10, noNaN: true })), { maxLength: 300 }), fc.integer({ min: 0, max: 200 }), (rows, cap) => {
        const manual = [{ cidr: mustParseCidr('203.0.113.9', 'test'), score: 9, ts: NOW }];
        const s = selectEntries({ now: NOW, feed: rows.map(([n, score]) => ind(n, score)), manualBlocks: manual, whitelist: [], protectedSet: ProtectedSet.of([]), minPrefix: 8, threshold: 3, maximumRules: cap, scoring });
        const c = s.columns;
        expect(c.length).toBe(s.entries.length);
        expect(c.length).toBeLessThanOrEqual(cap);
        expect(Array.from({ length: c.length }, (_, i) => c.entry(i))).toEqual(s.entries);
        expect(plain(selectionOf(SelectedColumns.of(s.entries), s.skipped))).toEqual(plain(s));
      }),
      { numRuns: 100 },
    );
  });
});

describe('selectionWithOverrides', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const ctx = (maximumRules: number) => {
    const state_dir = mkdtempSync(join(tmpdir(), 'wcf-sel-'));
    dirs.push(state_dir);
    return { config: { state_dir, min_prefix: 16 } as AgentConfig, protectedSet: ProtectedSet.of([]), maximumRules, now: NOW, logger: noLogs };
  };
  const feed = [ind(1, 9), ind(2, 8), ind(3, 7)];
  const selected = () => selectEntries({ now: NOW, feed, manualBlocks: [], whitelist: [], protectedSet: ProtectedSet.of([]), minPrefix: 8, threshold: 3, maximumRules: 10, scoring });

  it('without an override in force: the selection’s own entries, capped at the maximum_rules in force; the base is all of them', () => {
    const s = selected();
    const r = selectionWithOverrides(s, ctx(2));
    expect(r.selection.entries.map((e) => e.cidr.text)).toEqual(['198.51.0.1', '198.51.0.2']);
    expect(r.selection.skipped).toEqual(s.skipped);
    expect(r.base).toBe(s.columns);
    expect(selectionWithOverrides(s, ctx(10)).selection).toBe(s);
  });

  it('with overrides: a local allow takes its entry out and a local block comes first; the base stays the feeds’ selection', () => {
    const c = ctx(10);
    saveOverrides(c.config.state_dir, [
      { cidr: mustParseCidr('198.51.0.2', 'test'), action: 'allow', createdAt: NOW - 5, expiresAt: null },
      { cidr: mustParseCidr('192.0.2.44', 'test'), action: 'block', createdAt: NOW - 5, expiresAt: NOW + 600 },
    ]);
    const r = selectionWithOverrides(selected(), c);
    expect(r.selection.entries.map((e) => `${e.reason}:${e.cidr.text}`)).toEqual(['local:192.0.2.44', 'score:198.51.0.1', 'score:198.51.0.3']);
    expect(r.selection.columns.length).toBe(3);
    expect(r.base.length).toBe(3);
  });
});
