import { describe, expect, it } from 'vitest';
import { duration, isoTime, table } from '../../../src/cli/format.js';
import { parseLimit } from '../../../src/cli/commands/plan.js';
import { UsageError } from '../../../src/errors.js';

describe('table', () => {
  it('pads every column to its widest cell, two spaces apart, with a dash rule under the headers', () => {
    const t = table(['reason', 'ip', 'score'], [
      ['manual', '10.0.0.1', '-'],
      ['score', '192.168.100.200', '12.50'],
    ], ['l', 'l', 'r']);
    expect(t.split('\n')).toEqual([
      'reason  ip               score',
      '------  ---------------  -----',
      'manual  10.0.0.1             -',
      'score   192.168.100.200  12.50',
    ]);
  });

  it('every line puts a column at the same offset; no trailing blanks', () => {
    const rows = [['a', 'x'], ['longer label', 'y'], ['mid', 'zzz']];
    const lines = table(['k', 'v'], rows).split('\n');
    const offsets = lines.slice(2).map((l, i) => l.indexOf(rows[i]![1]!));
    expect(new Set(offsets)).toEqual(new Set(['longer label'.length + 2]));
    for (const l of lines) expect(l).toBe(l.trimEnd());
  });

  it('right-aligned numbers end in the same column; numbers are accepted as cells', () => {
    const lines = table(['n', 'name'], [[5, 'a'], [12345, 'b']], ['r', 'l']).split('\n');
    expect(lines[2]).toBe('    5  a');
    expect(lines[3]).toBe('12345  b');
  });

  it('a header wider than the cells sets the width', () => {
    expect(table(['expires in'], [['1s']], ['r']).split('\n')).toEqual(['expires in', '----------', '        1s']);
  });
});

describe('duration', () => {
  it.each([
    [0, '0s'],
    [59.9, '59s'],
    [60, '1m 00s'],
    [3599, '59m 59s'],
    [3600, '1h 00m'],
    [7500, '2h 05m'],
    [86399, '23h 59m'],
    [86400, '1d 00h'],
    [3 * 86400 + 4 * 3600 + 59, '3d 04h'],
  ])('%s s -> %s', (s, text) => {
    expect(duration(s)).toBe(text);
  });

  it('null is never, negative is passed', () => {
    expect(duration(null)).toBe('never');
    expect(duration(-1)).toBe('passed');
  });
});

describe('isoTime', () => {
  it('whole-second UTC, "-" for none', () => {
    expect(isoTime(1_800_000_000)).toBe('2027-01-15T08:00:00Z');
    expect(isoTime(undefined)).toBe('-');
    expect(isoTime(null)).toBe('-');
  });
});

describe('plan --limit', () => {
  it('a whole number >= 1; default 50', () => {
    expect(parseLimit(undefined)).toBe(50);
    expect(parseLimit('1')).toBe(1);
    expect(parseLimit(' 200 ')).toBe(200);
    expect(parseLimit('007')).toBe(7);
  });

  it.each(['abc', '0', '-5', '1.5', '', '1e3', '9'.repeat(20)])('%j is a usage error naming --limit', (v) => {
    expect(() => parseLimit(v)).toThrow(UsageError);
    expect(() => parseLimit(v)).toThrow(/^--limit: expected a whole number/);
  });
});
