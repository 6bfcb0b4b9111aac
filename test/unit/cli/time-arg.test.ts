import { describe, expect, it } from 'vitest';
import { parseTime } from '../../../src/cli/time-arg.js';
import { UsageError } from '../../../src/errors.js';

/** A moment on the command line (`history --since/--until`, `explain --at`): never a day other than the one typed. */

const refused = (value: string, flag = '--until') => {
  try {
    parseTime(value, flag);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error(`${value} was accepted`);
};

describe('parseTime', () => {
  it('reads epoch seconds and ISO 8601 times (UTC without a zone)', () => {
    expect(parseTime('1748736000', '--at')).toBe(1748736000);
    expect(parseTime('2025-06-01', '--at')).toBe(1748736000);
    expect(parseTime('2025-06-01T10:00', '--at')).toBe(1748772000);
    expect(parseTime('2025-06-01 10:00:30Z', '--at')).toBe(1748772030);
    expect(parseTime('2025-06-01T10:00+05:30', '--at')).toBe(1748752200);
    expect(parseTime('2024-02-29', '--at')).toBe(1709164800);
    expect(parseTime('2025-12-31T23:59:59.999Z', '--at')).toBe(1767225599);
  });

  it('refuses a date that does not exist instead of rolling it over, naming the option and why', () => {
    expect(refused('2025-02-30')).toBe('--until: "2025-02-30" is no date and time that exists (February 2025 has 28 days)');
    expect(refused('2025-02-29', '--since')).toMatch(/^--since: .*February 2025 has 28 days/);
    expect(refused('2100-02-29', '--at')).toMatch(/^--at: .*February 2100 has 28 days/);
    expect(refused('2025-04-31T10:00Z')).toMatch(/April 2025 has 30 days/);
    expect(refused('2025-06-00')).toMatch(/June 2025 has 30 days/);
    expect(refused('2025-13-01')).toMatch(/no month 13/);
    expect(refused('2025-00-10')).toMatch(/no month 00/);
    expect(refused('2025-06-01T24:00')).toMatch(/hours go from 00 to 23/);
    expect(refused('2025-06-01T23:60Z')).toMatch(/minutes go from 00 to 59/);
    expect(refused('2025-06-01T23:59:60Z')).toMatch(/seconds go from 00 to 59/);
    expect(refused('2025-06-01T10:00+24:00')).toMatch(/the offset \+24:00 is no time zone, at most ±23:59\)$/);
  });

  it('anything else is refused with the forms it takes', () => {
    expect(refused('noon', '--at')).toMatch(/^--at: expected epoch seconds or an ISO 8601 time/);
    expect(refused('2025-6-1')).toMatch(/^--until: expected/);
  });
});
