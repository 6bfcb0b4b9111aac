import { describe, expect, it } from 'vitest';
import { LOCAL_DEFAULT_SOURCES, resolveSettings, type Settings } from '../../../src/config/server.js';

const prev: Settings = { maximum_rules: 100, score_threshold: 3, sync_time: 15, running: true, version: null };

describe('resolveSettings', () => {
  it('takes numbers and numeric strings from the server', () => {
    const r = resolveSettings({ maximum_rules: '500', score_threshold: 5, sync_time: ' 10 ', running: 'yes', version: '0.2.0' }, prev, LOCAL_DEFAULT_SOURCES);
    expect(r.settings).toEqual({ maximum_rules: 500, score_threshold: 5, sync_time: 10, running: true, version: '0.2.0' });
    expect(r.sources.maximum_rules).toBe('server');
    expect(r.problems).toEqual([]);
  });

  it.each(['false', 'no', 'off', '0', 'disabled', 'stopped', 'OFF'])('running %j stops enforcing', (v) => {
    expect(resolveSettings({ running: v }, prev, LOCAL_DEFAULT_SOURCES).settings.running).toBe(false);
  });

  it('keeps the previous value for each invalid one and names the field', () => {
    const r = resolveSettings({ maximum_rules: '-5', score_threshold: 'high', sync_time: 1e9, running: 'maybe' }, prev, LOCAL_DEFAULT_SOURCES);
    expect(r.settings).toEqual(prev);
    expect(r.problems).toEqual([
      expect.stringMatching(/^config\.maximum_rules: /),
      expect.stringMatching(/^config\.score_threshold: /),
      expect.stringMatching(/^config\.sync_time: .*limit/),
      expect.stringMatching(/^config\.running: /),
    ]);
  });

  it('keeps everything when the record is gone', () => {
    expect(resolveSettings(undefined, prev, LOCAL_DEFAULT_SOURCES).settings).toEqual(prev);
  });
});
