import { UsageError } from '../errors.js';
import { terminalSafe } from '../util/terminal-text.js';

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|([+-])(\d{2}):?(\d{2}))?$/i;
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** Days of month `m` (1..12) of year `y`, by the Gregorian calendar. */
function daysIn(y: number, m: number): number {
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/**
 * Why the fields of an ISO 8601 time name no moment, or undefined when they do. JavaScript's
 * Date.parse rolls an impossible day over (`2025-02-30` is read as 2 March, `T24:00` as the
 * next day), so the fields are checked before it sees them: a typo in a date must not quietly
 * become another day.
 */
function impossible(m: RegExpExecArray): string | undefined {
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (mo < 1 || mo > 12) return `there is no month ${m[2]}`;
  const days = daysIn(y, mo);
  if (d < 1 || d > days) return `${MONTHS[mo - 1]} ${m[1]} has ${days} days`;
  if (m[4] !== undefined && Number(m[4]) > 23) return 'hours go from 00 to 23';
  if (m[5] !== undefined && Number(m[5]) > 59) return 'minutes go from 00 to 59';
  if (m[6] !== undefined && Number(m[6]) > 59) return 'seconds go from 00 to 59';
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return `the offset ${m[7]} is no time zone, at most ±23:59`;
  return undefined;
}

/**
 * A moment given on the command line as `flag`: epoch seconds, or an ISO 8601 date and time
 * (`2025-06-01T14:03:00Z`; without a zone, UTC). A date or time that does not exist
 * (`2025-02-30`, `T24:00`) is a usage error naming the flag, never another day.
 */
export function parseTime(value: string, flag: string): number {
  const text = value.trim();
  if (/^\d{1,12}$/.test(text)) return Number(text);
  const m = ISO.exec(text);
  if (m) {
    const why = impossible(m);
    if (why !== undefined) throw new UsageError(`${flag}: ${JSON.stringify(terminalSafe(value, 60))} is no date and time that exists (${why})`);
    const zoned = m[7] !== undefined || text.length === 10 ? text : `${text}Z`;
    const ms = Date.parse(zoned.replace(' ', 'T'));
    if (Number.isFinite(ms)) return Math.floor(ms / 1000);
  }
  throw new UsageError(`${flag}: expected epoch seconds or an ISO 8601 time such as 2025-06-01T14:03:00Z, got ${JSON.stringify(terminalSafe(value, 60))}`);
}
