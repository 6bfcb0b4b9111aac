import { describe, expect, it } from 'vitest';
import { agentRows, configureBody, parseAgid, parsePositiveInt } from '../../../src/cli/commands/agents.js';
import { buildReport, parseConfidence, parseDecision, parseReportIp, parseTtl, TEXT_MAX } from '../../../src/cli/commands/report.js';
import { UsageError } from '../../../src/errors.js';

function usage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error('expected a UsageError');
}

describe('agents configure flags', () => {
  it('sends only the given fields, all as strings', () => {
    expect(configureBody({ maximumRules: '500' })).toEqual({ maximum_rules: '500' });
    expect(configureBody({ scoreThreshold: '7', syncTime: '15', running: 'Off', version: '0.2.0' })).toEqual({
      score_threshold: '7',
      sync_time: '15',
      running: 'false',
      version: '0.2.0',
    });
    for (const on of ['on', 'true', 'yes', 'enabled']) expect(configureBody({ running: on }).running).toBe('true');
    for (const off of ['off', 'false', 'no', 'disabled']) expect(configureBody({ running: off }).running).toBe('false');
    expect(configureBody({ maximumRules: '0042' }).maximum_rules).toBe('42');
  });

  it('rejects bad values naming the flag, with the schema limits', () => {
    expect(usage(() => configureBody({ maximumRules: '0' }))).toMatch(/^--maximum-rules: .*1 to 2000000/);
    expect(usage(() => configureBody({ maximumRules: '2000001' }))).toMatch(/^--maximum-rules: /);
    expect(usage(() => configureBody({ scoreThreshold: '2.5' }))).toMatch(/^--score-threshold: /);
    expect(usage(() => configureBody({ syncTime: '10081' }))).toMatch(/^--sync-time: .*10080/);
    expect(usage(() => configureBody({ syncTime: '-5' }))).toMatch(/^--sync-time: /);
    expect(usage(() => configureBody({ running: 'maybe' }))).toMatch(/^--running: /);
    expect(usage(() => configureBody({ version: 'a b' }))).toMatch(/^--version: /);
    expect(usage(() => configureBody({}))).toMatch(/at least one of --maximum-rules/);
    expect(usage(() => parseAgid(''))).toMatch(/^--agid: /);
    expect(usage(() => parseAgid('a b'))).toMatch(/^--agid: /);
    expect(parsePositiveInt('--x', ' 12 ', 100)).toBe('12');
  });

  it('renders agent rows defensively', () => {
    const rows = agentRows(
      [
        { agid: 'a1', hostanme: 'web-1', plugin: 'ipset', code: 0, blacklist: ['192.0.2.1', '192.0.2.2'], ts: 1000, config: { running: 'true', maximum_rules: 500, score_threshold: 4, sync_time: 5, version: '0.1.0' } },
        { agid: 'a2', active: false },
      ],
      1060,
    );
    expect(rows[0]).toEqual(['a1', 'web-1', 'ipset', '0', '2', '1970-01-01T00:16:40Z (1m 00s ago)', 'true', '500', '4', '5', '0.1.0']);
    expect(rows[1]).toEqual(['a2', '-', '-', '-', '-', 'never', '- (inactive)', '-', '-', '-', '-']);
  });
});

describe('report flags', () => {
  const now = 1_800_000_000;

  it('builds the E2 body', () => {
    expect(buildReport('203.0.113.7', { confidence: '0.8' }, now)).toEqual({ ip: '203.0.113.7', confidence: 0.8, decision: -1 });
    expect(buildReport('198.51.100.0/24', { confidence: '1', decision: 'block', ttl: '1h', notes: 'n', source: 's' }, now)).toEqual({
      ip: '198.51.100.0/24',
      confidence: 1,
      decision: 1,
      ttl: now + 3600,
      notes: 'n',
      source: 's',
    });
    expect(parseReportIp('192.0.2.9/32')).toBe('192.0.2.9');
  });

  it('accepts the decision words and numbers', () => {
    expect([parseDecision('block'), parseDecision('allow'), parseDecision('none'), parseDecision('1'), parseDecision('0'), parseDecision('-1'), parseDecision(undefined)]).toEqual([1, 0, -1, 1, 0, -1, -1]);
  });

  it('takes ttl as seconds from now, a duration, or an epoch', () => {
    expect(parseTtl('3600', now)).toBe(now + 3600);
    expect(parseTtl('90m', now)).toBe(now + 5400);
    expect(parseTtl('7d', now)).toBe(now + 7 * 86400);
    expect(parseTtl(String(now + 10), now)).toBe(now + 10);
  });

  it('rejects bad values naming the flag', () => {
    expect(usage(() => parseReportIp('300.1.1.1'))).toMatch(/^IP: /);
    expect(usage(() => parseReportIp('10.1.2.3/8'))).toMatch(/^IP: .*host bits.*10\.0\.0\.0\/8/);
    expect(usage(() => parseReportIp('010.1.1.1'))).toMatch(/^IP: /);
    expect(usage(() => parseReportIp('2001:db8::1'))).toMatch(/^IP: /);
    expect(usage(() => parseConfidence('1.5'))).toMatch(/^--confidence: .*0 to 1/);
    expect(usage(() => parseConfidence('-0.1'))).toMatch(/^--confidence: /);
    expect(usage(() => parseConfidence('abc'))).toMatch(/^--confidence: /);
    expect(usage(() => parseConfidence(undefined))).toMatch(/^--confidence: /);
    expect(usage(() => parseDecision('2'))).toMatch(/^--decision: /);
    expect(usage(() => parseTtl('0', now))).toMatch(/^--ttl: .*future/);
    expect(usage(() => parseTtl(String(now - 1), now))).toMatch(/^--ttl: .*future/);
    expect(usage(() => parseTtl('soon', now))).toMatch(/^--ttl: /);
    expect(usage(() => buildReport('192.0.2.1', { confidence: '0.5', notes: 'x'.repeat(TEXT_MAX + 1) }, now))).toMatch(/^--notes: /);
  });
});
