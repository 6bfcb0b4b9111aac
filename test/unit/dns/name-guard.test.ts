import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { createDnsPlugin, domainPolicyOf } from '../../../src/dns/index.js';
import { parseRpzNames } from '../../../src/dns/render.js';
import { rpzOriginOf } from '../../../src/dns/rpz/origin.js';
import { blockRefusal, isDnsName } from '../../../src/net/dns-name.js';
import { hostOfUrl } from '../../../src/feed/host.js';

/**
 * Names a resolver backend must never be given: a label RPZ gives a meaning to (a trigger
 * such as `rpz-client-ip` turns a name into a policy for every client), and a name that
 * with the zone's wildcard and origin passes DNS's 255-octet limit (the resolver refuses the
 * whole zone).
 */

const logger = pino({ level: 'silent' });
const RPZ_LABELS = ['rpz-ip', 'rpz-nsip', 'rpz-nsdname', 'rpz-client-ip', 'rpz-drop', 'rpz-passthru', 'rpz-tcp-only'];

const label = fc.stringMatching(/^[a-z0-9_](?:[a-z0-9_-]{0,14}[a-z0-9_])?$/).filter((l) => !l.startsWith('rpz-'));
const name = fc.array(label, { minLength: 1, maxLength: 6 }).map((ls) => ls.join('.'));

/** A valid DNS name of exactly `length` characters (labels of at most 63). */
function nameOfLength(length: number): string {
  const labels: string[] = [];
  let left = length;
  while (left > 0) {
    const take = Math.min(63, left === 64 ? 62 : left);
    labels.push('x'.repeat(take));
    left -= take + 1;
  }
  const n = labels.join('.');
  if (n.length !== length || !isDnsName(n)) throw new Error(`cannot build a name of ${length}`);
  return n;
}

describe('RPZ trigger labels', () => {
  it.each(RPZ_LABELS)('a feed URL with a %s label is no host to block', (l) => {
    const h = hostOfUrl(`http://32.1.0.0.127.${l}/`);
    expect(h.kind).toBe('invalid');
    expect(h.kind === 'invalid' && h.error).toContain(l);
    expect(hostOfUrl(`http://${l}.evil.example/`).kind).toBe('invalid');
  });

  it('any name with a label starting with rpz- is refused, wherever the label sits; others are not', () => {
    fc.assert(
      fc.property(name, fc.nat(6), fc.constantFrom(...RPZ_LABELS, 'rpz-future', 'rpz-x1'), (n, at, trigger) => {
        expect(blockRefusal(n)).toBeUndefined();
        const ls = n.split('.');
        ls.splice(at % (ls.length + 1), 0, trigger);
        expect(blockRefusal(ls.join('.'))).toContain(trigger);
      }),
      { numRuns: 2000 },
    );
    // A label that merely contains the letters is an ordinary label.
    expect(blockRefusal('my-rpz-ip.example')).toBeUndefined();
    expect(blockRefusal('rpz.example')).toBeUndefined();
  });
});

describe('the 255-octet limit with the RPZ wildcard and origin', () => {
  it('*.NAME.ORIGIN. must fit in 255 octets: with origin rpz.wcf a name may have 243 characters, not 244', () => {
    expect(blockRefusal(nameOfLength(243), 'rpz.wcf')).toBeUndefined();
    expect(blockRefusal(nameOfLength(244), 'rpz.wcf')).toMatch(/too long.*rpz\.wcf/);
    // Without an origin (unbound's local-zone), the name's own limit: 253.
    expect(blockRefusal(nameOfLength(253))).toBeUndefined();
  });

  it('for any origin and name: refused exactly when the wire form of *.NAME.ORIGIN. passes 255 octets', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 253 }), fc.integer({ min: 1, max: 120 }), (len, originLen) => {
        const n = nameOfLength(len);
        const origin = nameOfLength(originLen);
        // Wire form: every label with its length octet, plus the root: text length + 2.
        const wire = `*.${n}.${origin}`.length + 2;
        expect(blockRefusal(n, origin) !== undefined).toBe(wire > 255);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('the RPZ zone\'s origin for the length check', () => {
  it('is the zone rpz_reload names last, never shorter than rpz.wcf', () => {
    expect(rpzOriginOf(['rndc', 'reload', 'Blocklist.RPZ.corp.example.'])).toBe('blocklist.rpz.corp.example');
    expect(rpzOriginOf(['unbound-control', '-c', '/etc/unbound/unbound.conf', 'auth_zone_reload', 'wcf.rpz.internal'])).toBe('wcf.rpz.internal');
    for (const reload of [undefined, ['/usr/local/sbin/reload-rpz'], ['rndc', 'reload'], ['rndc', 'reload', 'rpz'], ['systemctl', 'reload', 'unbound']]) {
      expect(rpzOriginOf(reload), JSON.stringify(reload)).toBe('rpz.wcf');
    }
  });
});

describe('one place every resolver backend goes through', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-guard-'));
  mkdirSync(join(dir, 'state'));
  const config = (extra: Record<string, unknown>) =>
    parseConfig(JSON.stringify({ agid: 'a', base_url: 'https://ti.vendor.lan/api/v1', token: 't', url_feed: true, state_dir: join(dir, 'state'), ...extra }), join(dir, 'config.json'));

  // Any other string (control characters, `#`, `/`, newlines, IDN, empty labels, any length), on every backend
  // with its real resolver: test/integration/dns/name-guard-files.test.ts.
  it('names with trigger labels or too long for the zone never reach the backend', async () => {
    const long = nameOfLength(244);
    const cfg = config({ dns_plugin: 'rpz', rpz_file: join(dir, 'rpz.zone') });
    const plugin = createDnsPlugin(cfg, { logger, dryRun: true, policy: domainPolicyOf(cfg, { searchDomains: [] }) });
    const r = await plugin.apply(['32.1.0.0.127.rpz-client-ip', 'evil.rpz-nsdname', long, 'evil.example']);
    expect(r.total).toBe(1);
    const zone = readFileSync(join(dir, 'state', 'dns-dry-run.zone'), 'utf8');
    expect(parseRpzNames(zone)).toEqual(['evil.example']);
    expect(zone).not.toContain('rpz-');
  });
});
