import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { LEFT_ALONE_KEPT, recordLeftAlone } from '../../../../src/agent/cycle/url-feed/left-alone.js';
import { DnsStateStore } from '../../../../src/agent/state/url-feed-state.js';

/** A logger that keeps each line's level and message. */
function lines() {
  const out: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void out.push(JSON.parse(s) as { level: number; msg: string }) });
  return { out, logger };
}

const dirs: string[] = [];
const stateDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'wcf-left-alone-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const ADMIN = { name: 'evil.test', held: 'local-data "www.evil.test. 300 IN A 10.9.9.9"' };

describe('names left alone at the resolver', () => {
  it('are kept for status and explain, and logged once per change of the list, not every cycle', () => {
    const store = new DnsStateStore(stateDir(), pino({ level: 'silent' }));
    const { out, logger } = lines();
    recordLeftAlone(store, logger, 'unbound', [ADMIN]);
    expect(store.small.leftAlone).toEqual({ plugin: 'unbound', count: 1, names: { 'evil.test': ADMIN.held } });
    expect(out).toEqual([{ ...out[0], level: 40, msg: expect.stringContaining(`evil.test (${ADMIN.held})`) }]);
    recordLeftAlone(store, logger, 'unbound', [ADMIN]);
    recordLeftAlone(store, logger, 'unbound', [ADMIN]);
    expect(out).toHaveLength(1);
    // Another record holding the same name is a change.
    recordLeftAlone(store, logger, 'unbound', [{ name: 'evil.test', held: 'local-zone "evil.test." static' }]);
    expect(out).toHaveLength(2);
    recordLeftAlone(store, logger, 'unbound', []);
    expect(store.small.leftAlone).toBeUndefined();
    expect(out.at(-1)).toMatchObject({ level: 30, msg: 'no name is left alone at the resolver any more' });
    recordLeftAlone(store, logger, 'unbound', []);
    expect(out).toHaveLength(3);
  });

  it('all are counted; the first ones are kept with what holds them, so the state stays small', () => {
    const store = new DnsStateStore(stateDir(), pino({ level: 'silent' }));
    const many = Array.from({ length: LEFT_ALONE_KEPT + 5 }, (_, i) => ({ name: `n${i}.test`, held: 'local-zone "x." static' }));
    recordLeftAlone(store, pino({ level: 'silent' }), 'unbound', many);
    expect(store.small.leftAlone?.count).toBe(LEFT_ALONE_KEPT + 5);
    expect(Object.keys(store.small.leftAlone!.names)).toHaveLength(LEFT_ALONE_KEPT);
  });
});
