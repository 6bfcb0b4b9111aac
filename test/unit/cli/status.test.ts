import { describe, expect, it } from 'vitest';
import { renderStatus, statusRows } from '../../../src/cli/commands/status.js';
import type { CycleRecord } from '../../../src/agent/state/store.js';
import type { SettingSources, Settings } from '../../../src/config/server.js';
import { enforcingOf, type LiveStatus } from '../../../src/cli/status-live.js';

const settings: Settings = { maximum_rules: 300, score_threshold: 4, sync_time: 5, running: true, version: null };
const sources: SettingSources = { maximum_rules: 'server', score_threshold: 'server', sync_time: 'previous', running: 'server', version: 'local default' };
const NOW = 1_800_000_000;
const cycle = (over: Partial<CycleRecord> = {}): CycleRecord => ({
  ts: NOW - 125,
  ok: true,
  code: 0,
  durationMs: 900,
  plugin: 'nftables',
  applied: 42,
  byReason: { manual: 2, score: 40, local: 0 },
  skipped: { allowlist: 0, too_wide: 0, whitelist: 0, threshold: 0, cap: 0 },
  fullPull: true,
  running: true,
  ...over,
});

const LABELS = [
  'agent',
  'daemon',
  'last sync',
  'last success',
  'next sync',
  'plugin',
  'firewall',
  'entries applied',
  'enforcing',
  'local overrides',
  'maximum_rules',
  'score_threshold',
  'sync_time',
  'last full pull',
  'repairs',
];

/** A daemon up for 2 h, the nft table intact with 42 entries. */
const live = (over: Partial<LiveStatus> = {}): LiveStatus => ({
  daemon: { pid: 4242, startedAt: NOW - 7200, otherPidNamespace: false, who: 'pid 4242' },
  lock: undefined,
  firewall: { plugin: 'nftables', objects: [{ what: 'nft table inet wcf_agent', state: 'present' }], entries: 42 },
  overrides: { allow: 1, block: 0 },
  ...over,
});

/** label -> value, and the column each value starts at. */
function parse(text: string) {
  const lines = text.trimEnd().split('\n');
  const col = LABELS.reduce((w, l) => Math.max(w, l.length), 0) + 2;
  return {
    lines,
    col,
    values: Object.fromEntries(lines.map((l) => [l.slice(0, col).trim(), l.slice(col)])),
  };
}

describe('status (human output)', () => {
  it('labels in order, every value starting in one column after two spaces', () => {
    const s = { lastCycle: cycle(), lastSuccessAt: NOW - 125, nextSyncAt: NOW + 175, lastFullPullAt: NOW - 3600 };
    const { lines, col, values } = parse(renderStatus(statusRows('agent-7', s, settings, sources, NOW, live())));
    expect(lines.map((l) => l.slice(0, col).trimEnd())).toEqual(LABELS);
    for (const l of lines) {
      expect(l.slice(col - 2, col)).toBe('  ');
      expect(l[col]).not.toBe(' ');
    }
    expect(values).toEqual({
      agent: 'agent-7',
      daemon: 'running, pid 4242, up 2h 00m',
      'last sync': '2027-01-15T07:57:55Z (2m 05s ago), ok',
      'last success': '2027-01-15T07:57:55Z',
      'next sync': '2027-01-15T08:02:55Z (in 2m 55s)',
      plugin: 'nftables',
      firewall: 'nftables: 1 objects present, 42 entries',
      'entries applied': '42 (2 manual, 40 score)',
      enforcing: 'yes (42 entries in the kernel)',
      'local overrides': '1 allow, 0 block',
      maximum_rules: '300 (server)',
      score_threshold: '4 (server)',
      sync_time: '5 min (previous)',
      'last full pull': '2027-01-15T07:00:00Z',
      repairs: '0',
    });
  });

  it('repairs made between cycles: how many, when the last was, and what was missing', () => {
    const s = { lastCycle: cycle(), repairs: { count: 3, lastAt: NOW - 65, objects: ['nft table inet wcf_agent'] } };
    const { values } = parse(renderStatus(statusRows('a', s, settings, sources, NOW, live())));
    expect(values.repairs).toBe('3, last 2027-01-15T07:58:55Z (1m 05s ago): nft table inet wcf_agent');
  });

  it('before any sync: never, dashes, zero', () => {
    const { values } = parse(renderStatus(statusRows('a', {}, { ...settings, running: false }, sources, NOW, live({ daemon: undefined }))));
    expect(values).toMatchObject({ 'last sync': 'never', 'last success': '-', 'next sync': '-', plugin: '-', 'entries applied': '0', enforcing: 'no (running disabled)', daemon: 'not running' });
  });

  it('a failed cycle shows its code and a multi-line message on one line, keeping the columns', () => {
    const failed = cycle({ ok: false, code: 40, message: 'command failed: nft -f -: exit code 1: Error: Could not process rule\n  add element inet wcf_agent x\n  ^^^^' });
    const text = renderStatus(statusRows('a', { lastCycle: failed }, settings, sources, NOW, live()));
    const { lines, values } = parse(text);
    expect(lines).toHaveLength(LABELS.length);
    expect(values['last sync']).toBe('2027-01-15T07:57:55Z (2m 05s ago), FAILED code 40: command failed: nft -f -: exit code 1: Error: Could not process rule add element inet wcf_agent x ^^^^');
  });

  it('no daemon: no next sync shown, even if a killed one left its time behind', () => {
    const { values } = parse(renderStatus(statusRows('a', { lastCycle: cycle(), nextSyncAt: NOW + 100 }, settings, sources, NOW, live({ daemon: undefined, lock: { pid: 777, who: 'pid 777' } }))));
    expect(values).toMatchObject({ daemon: 'not running; a cycle holds the lock (pid 777)', 'next sync': '-' });
  });

  it('a daemon in another PID namespace (a container on this state dir) is named with it; its own cycle is "in a cycle now"', () => {
    const who = 'pid 1 in another PID namespace: pid:[4026532390]';
    const daemon = { pid: 1, startedAt: NOW - 7200, otherPidNamespace: true, who };
    const inCycle = parse(renderStatus(statusRows('a', { lastCycle: cycle() }, settings, sources, NOW, live({ daemon, lock: { pid: 1, who } }))));
    expect(inCycle.values.daemon).toBe(`running, ${who}, up 2h 00m, in a cycle now`);
    // A manual sync of this namespace, with the same PID number as the daemon has in its own.
    const sync = parse(renderStatus(statusRows('a', { lastCycle: cycle() }, settings, sources, NOW, live({ daemon, lock: { pid: 1, who: 'pid 1' } }))));
    expect(sync.values.daemon).toBe(`running, ${who}, up 2h 00m; a cycle holds the lock (pid 1)`);
  });
});

describe('enforcing, from what the kernel holds', () => {
  const table = (state: 'present' | 'absent') => ({ what: 'nft table inet wcf_agent', state });
  it.each<[string, Partial<LiveStatus>, boolean, { enforcing: boolean | null; why: string }]>([
    ['intact', {}, true, { enforcing: true, why: '42 entries in the kernel' }],
    [
      'intact, an nftables set too large to list',
      { firewall: { plugin: 'nftables', objects: [table('present')], entries: null, appliedNotListed: 1_000_000 } },
      true,
      { enforcing: true, why: '1000000 entries applied (not listed from the kernel past 20,000 entries)' },
    ],
    ['dry run', { firewall: { plugin: 'dry-run', objects: [], entries: null } }, true, { enforcing: false, why: 'dry run: nothing enforced' }],
    ['running disabled', {}, false, { enforcing: false, why: 'running disabled' }],
    ['flushed or never synced', { firewall: { plugin: 'nftables', objects: [table('absent')], entries: null } }, true, { enforcing: false, why: "none of the agent's objects is in the kernel (flushed, or never synced)" }],
    [
      'a hook deleted',
      { firewall: { plugin: 'ipset', objects: [{ what: 'ipset s', state: 'present' }, { what: 'iptables hook INPUT -> WCF-AGENT', state: 'absent' }], entries: null } },
      true,
      { enforcing: false, why: 'missing from the kernel: iptables hook INPUT -> WCF-AGENT' },
    ],
    ['unreadable', { firewall: { plugin: 'nftables', objects: [{ what: 'nft table inet wcf_agent', state: 'unreadable', error: 'Operation not permitted' }], entries: null } }, true, { enforcing: null, why: 'cannot read nft table inet wcf_agent (Operation not permitted)' }],
    [
      'several objects unreadable for one reason: the reason said once, after their names',
      {
        firewall: {
          plugin: 'nftables',
          objects: [
            { what: 'nft table inet wcf_agent', state: 'unreadable', error: 'cache initialization failed' },
            { what: 'nft set inet wcf_agent s', state: 'unreadable', error: 'cache initialization failed' },
            { what: 'nft chain inet wcf_agent input', state: 'unreadable', error: 'timed out' },
          ],
          entries: null,
        },
      },
      true,
      { enforcing: null, why: 'cannot read nft table inet wcf_agent, nft set inet wcf_agent s (cache initialization failed); nft chain inet wcf_agent input (timed out)' },
    ],
    [
      'an object under the agent\'s name that it did not create',
      { firewall: { plugin: 'nftables', objects: [{ what: 'nft table inet myfw', state: 'foreign', error: 'no marker' }], entries: null } },
      true,
      { enforcing: false, why: "nft table inet myfw is not the agent's: no marker" },
    ],
    ['no tool', { firewall: { plugin: null, objects: [], entries: null, error: 'no firewall tool found' } }, true, { enforcing: null, why: 'cannot read the firewall: no firewall tool found' }],
  ])('%s', (_name, over, running, expected) => {
    expect(enforcingOf(live(over), running)).toEqual(expected);
  });
});
