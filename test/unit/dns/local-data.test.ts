import { describe, expect, it } from 'vitest';
import { LocalDataView } from '../../../src/dns/unbound/local-data.js';
import { parseLocalZones } from '../../../src/dns/unbound/plugin.js';

/** What `unbound-control list_local_data` / `list_local_zones` print (tab-separated, blank lines between records). */
const ZONES = parseLocalZones(['evil.test. always_nxdomain', 'sink.test. redirect', 'www.other.test. transparent', 'localhost. static', 'admin.test. static'].join('\n'));
const DATA = [
  'www.evil.test.\t300\tIN\tA\t10.9.9.9',
  '',
  'sink.test.\t60\tIN\tA\t198.18.0.99',
  '',
  'sink.test.\t300\tIN\tTXT\t"kept by the admin"',
  '',
  'www.other.test.\t300\tIN\tA\t10.8.8.8',
  '',
  'localhost.\t10800\tIN\tA\t127.0.0.1',
  '',
].join('\n');

describe('someone else\'s local data around the agent\'s names', () => {
  const agentZones = new Set(['evil.test', 'sink.test']);
  const view = new LocalDataView(DATA, ZONES, agentZones, new Set(['evil.test', 'sink.test', 'other.test', 'clean.test', 'test']));

  it('a name carries foreign data when a record that is not the agent\'s sits at it or below it (the first such record is named)', () => {
    expect(view.foreignDataAt('evil.test')).toBe('www.evil.test.\t300\tIN\tA\t10.9.9.9'); // inside the agent's zone
    expect(view.foreignDataAt('sink.test')).toBe('sink.test.\t300\tIN\tTXT\t"kept by the admin"'); // beside the agent's sinkhole A
    expect(view.foreignDataAt('other.test')).toBe('www.other.test.\t300\tIN\tA\t10.8.8.8'); // in its own zone below
    expect(view.foreignDataAt('test')).toBe('www.evil.test.\t300\tIN\tA\t10.9.9.9');
    expect(view.foreignDataAt('clean.test')).toBeUndefined();
  });

  it('records held inside an agent\'s zone are the ones put back when it is removed; its own sinkhole answer is not', () => {
    expect(view.foreignInside('evil.test')).toEqual(['www.evil.test.\t300\tIN\tA\t10.9.9.9']);
    expect(view.foreignInside('sink.test')).toEqual(['sink.test.\t300\tIN\tTXT\t"kept by the admin"']);
    // In a zone of its own: removing the agent's zones does not touch it.
    expect(view.foreignInside('other.test')).toEqual([]);
  });

  it('the agent\'s sinkhole answer alone is no foreign data; the same record at a name that is not its zone is', () => {
    const own = new LocalDataView('sink.test.\t60\tIN\tA\t198.18.0.99\n', ZONES, agentZones, new Set(['sink.test']));
    expect(own.foreignDataAt('sink.test')).toBeUndefined();
    const notOurs = new LocalDataView('sink.test.\t60\tIN\tA\t198.18.0.99\n', ZONES, new Set(), new Set(['sink.test']));
    expect(notOurs.foreignDataAt('sink.test')).toBe('sink.test.\t60\tIN\tA\t198.18.0.99');
  });
});
