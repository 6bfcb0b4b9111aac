import { describe, expect, it } from 'vitest';
import { journalLine } from '../../src/log-journal.js';

const line = (o: Record<string, unknown>) => journalLine(JSON.stringify({ time: 1, pid: 2, hostname: 'h', ...o }));

describe('journal lines', () => {
  it('priority prefix per level, message, then key=value fields; no time, pid or host', () => {
    expect(line({ level: 40, msg: 'feed formula rejected', field: 'header.eval' })).toBe('<4>feed formula rejected field=header.eval');
    expect(line({ level: 50, msg: 'x', code: 'WCF_ERR_API_STATUS' })).toBe('<3>x code=WCF_ERR_API_STATUS');
    expect(line({ level: 30, msg: 'cycle done', applied: 5, ok: true })).toBe('<6>cycle done applied=5 ok=true');
    expect(line({ level: 20, msg: 'd' })).toBe('<7>d');
    expect(line({ level: 60, msg: 'f' })).toBe('<2>f');
  });

  it('values with spaces or quotes are quoted, objects are JSON, and nothing breaks the line', () => {
    expect(line({ level: 30, msg: 'a\nb\u0007', why: 'two words', t: { a: 1 } })).toBe('<6>a\\nb\\x07 why="two words" t={"a":1}');
    expect(journalLine('not json\nat all')).toBe('<6>not json\\nat all');
  });
});
