import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyDnsStep, type DnsPlan } from '../../../src/agent/cycle/url-feed/step.js';
import { parseConfig, type AgentConfig } from '../../../src/config/load.js';
import { renderServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { createDnsPlugin, domainPolicyOf } from '../../../src/dns/index.js';
import { UrlCache } from '../../../src/feed/url-cache.js';
import { selectDomains } from '../../../src/policy/domains.js';
import { createScoring } from '../../../src/score/decay.js';
import { waitFor } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * The last guard before every resolver file (the refusal of anything that is no DNS name, in
 * front of every backend) tested for what it claims: whatever strings a caller passes, or a feed
 * carries, each file the agent writes for a resolver holds only well-formed lines, each for a
 * valid DNS name, and exactly the valid names that are not protected. A name such as
 * `#/192.0.2.53` would otherwise become `server=/#/192.0.2.53/` in dnsmasq's servers-file: every
 * query forwarded to that address.
 *
 * The backends are the real ones, with real resolvers behind them in a namespace: unbound (its
 * runtime zones too, through unbound-control), the RPZ zone reloaded into unbound, dnsmasq's
 * servers-file with the SIGHUP, and the dry run's zone.
 */

const logger = pino({ level: 'silent' });

/** A DNS name as the test understands it, written down apart from the code under test. */
const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';
const WELL_FORMED = new RegExp(`^(?=.{1,253}$)(?:${LABEL}\\.)*${LABEL}$`);
const valid = (n: string) => WELL_FORMED.test(n) && !n.split('.').some((l) => l.startsWith('rpz-'));
/** `*.NAME.rpz.wcf.` in DNS's wire format fits 255 octets. */
const fitsRpz = (n: string) => `*.${n}.rpz.wcf`.length + 2 <= 255;

// ---- what callers and feeds may carry --------------------------------------------------------

const label = fc.stringMatching(/^[a-z0-9_](?:[a-z0-9_-]{0,10}[a-z0-9_])?$/);
const name = fc.array(label, { minLength: 1, maxLength: 5 }).map((ls) => [...ls, 'example'].join('.'));
/** Characters a resolver file gives a meaning to, or a terminal acts on, and non-ASCII. */
const SPECIAL = ['#', '/', '=', ';', '"', "'", '\\', ' ', '\t', '\n', '\r', '\0', '\x1b', '\x7f', '*', '$', '@', '{', '}', '(', ')', '[', ']', '<', '>', '|', '&', '`', ',', ':', '%', '+', '~', '^', '!', '?', 'ü', 'я', '中', '\u200b', '\ufeff', '.', '..', '-', '_', 'xn--', 'rpz-', 'A', 'Z'];
const piece = fc.oneof(label, fc.constantFrom(...SPECIAL), fc.string({ unit: 'binary', maxLength: 3 }));
/** A name of exactly `length` characters, labels of `size` (the last one shorter). */
const ofLength = (length: number, size: number) => {
  const labels: string[] = [];
  let left = length;
  while (left > 0) {
    const take = Math.min(size, left);
    labels.push('x'.repeat(take));
    left -= take + 1;
  }
  return labels.join('.');
};
const KNOWN = [
  '#/192.0.2.53',
  'printer.corp.example',
  'corp.example',
  'kubernetes.default.svc.cluster.local',
  '3.2.1.10.in-addr.arpa',
  '#',
  '/',
  '=',
  '*',
  '*.evil.example',
  'evil.example\nserver=/#/192.0.2.53',
  'evil.example/192.0.2.53',
  'evil.example"; local-zone: "." always_nxdomain; #',
  'evil.example CNAME .\n* CNAME .',
  'evil.example.\n$INCLUDE /etc/shadow',
  'bücher.example',
  'xn--bcher-kva.example',
  ' evil.example',
  'evil.example ',
  'EVIL.example',
  'evil.example.',
  '.',
  '',
  '-evil.example',
  'evil-.example',
  'a..b.example',
  '.a.example',
  '32.1.0.0.127.rpz-client-ip',
  'x'.repeat(63) + '.example',
  ofLength(253, 63),
  ofLength(253, 9),
  ofLength(252, 63),
  'x'.repeat(64) + '.example',
];
const hostile = fc.oneof(
  { weight: 4, arbitrary: fc.array(piece, { minLength: 1, maxLength: 8 }).map((ps) => ps.join('')) },
  { weight: 3, arbitrary: name },
  // A valid name with one thing put between two of its labels (an empty label, a special character).
  { weight: 2, arbitrary: fc.tuple(name, name, fc.constantFrom('', ...SPECIAL)).map(([a, b, s]) => `${a}.${s}.${b}`) },
  // Around every length limit: 63 per label, 253 per name, 255 octets with the RPZ wildcard and origin.
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom(1, 9, 62, 63, 64)).map(([l, s]) => ofLength(l, s)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom(...KNOWN) },
);
const callerNames = fc.array(hostile, { maxLength: 24 });
/** URL strings a feed may hold: hostile hosts in URLs of every shape, and strings that are no URL. */
const feedUrls = fc.array(
  fc.oneof(
    hostile.map((h) => `http://${h}/x`),
    hostile.map((h) => `https://user@${h}:8443/`),
    hostile,
    fc.string({ unit: 'binary', maxLength: 60 }),
  ),
  { maxLength: 24 },
);

// ---- the lines each file may hold --------------------------------------------------------------

/** The names a file holds, each line checked; throws on any line that is not well-formed. */
function namesIn(kind: 'dnsmasq' | 'unbound' | 'rpz', text: string): string[] {
  expect(text, 'printable ASCII only').toMatch(/^[\x20-\x7e\n]*$/);
  expect(text.endsWith('\n'), 'ends with a newline').toBe(true);
  const lines = text.slice(0, -1).split('\n');
  const header = { dnsmasq: 1, unbound: 2, rpz: 4 }[kind];
  const head = lines.slice(0, header);
  const body = lines.slice(header);
  const names: string[] = [];
  const take = (line: string, re: RegExp) => {
    const m = re.exec(line);
    if (!m) throw new Error(`${kind}: a line that is not the agent's format: ${JSON.stringify(line)}`);
    if (!valid(m[1]!)) throw new Error(`${kind}: a line for something that is no DNS name: ${JSON.stringify(line)}`);
    return m[1]!;
  };
  if (kind === 'dnsmasq') {
    expect(head[0]).toMatch(/^# managed by wcf-agent: [a-zA-Z0-9 (),;-]+$/);
    for (const l of body) names.push(take(l, /^server=\/([^/]+)\/$/));
  } else if (kind === 'unbound') {
    expect(head[0]).toMatch(/^# managed by wcf-agent: [a-zA-Z0-9 (),;-]+$/);
    expect(head[1]).toBe('server:');
    for (const l of body) names.push(take(l, /^ {2}local-zone: "([^"]+)\." always_nxdomain$/));
  } else {
    expect(head[0]).toMatch(/^; managed by wcf-agent: [a-zA-Z0-9 (),;-]+$/);
    expect(head.slice(1)).toEqual(['$TTL 60', expect.stringMatching(/^@ IN SOA localhost\. hostmaster\.localhost\. \d+ 3600 600 86400 60$/), '@ IN NS localhost.']);
    expect(body.length % 2).toBe(0);
    for (let i = 0; i < body.length; i += 2) {
      const n = take(body[i]!, /^(\S+) CNAME \.$/);
      expect(body[i + 1]).toBe(`*.${n} CNAME .`);
      names.push(n);
    }
  }
  return names;
}

// ---- the lab ---------------------------------------------------------------------------------

let lab: ResolverLab;
let configs: Record<'unbound' | 'rpz' | 'dnsmasq' | 'dry-run', AgentConfig>;
/** unbound's own local zones before the agent adds any. */
let builtinZones: Set<string>;

const zoneNames = async () => new Set((await lab.localZones()).map((l) => l.split(' ')[0]!.replace(/\.$/, '')));

beforeAll(async () => {
  if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
  lab = await createResolverLab({ records: {}, rpz: true });
  builtinZones = await zoneNames();
  // dnsmasq beside unbound in the lab's namespace, reading the agent's servers-file.
  const serversFile = join(lab.dir, 'servers.conf');
  const pidFile = join(lab.dir, 'dnsmasq.pid');
  writeFileSync(serversFile, renderServersFile([]));
  lab.ns.spawn('dnsmasq', ['-k', '-u', 'root', '-C', '/dev/null', '--no-resolv', '--no-hosts', '--listen-address=127.0.0.1', '--bind-interfaces', '--port=5354', `--servers-file=${serversFile}`, '-x', pidFile, '--log-facility=-']);
  await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 'dnsmasq to write its pid file', 15_000);
  const state = (b: string) => {
    const d = join(lab.dir, `state-${b}`);
    mkdirSync(d, { recursive: true });
    return d;
  };
  const config = (b: string, extra: Record<string, unknown>) =>
    parseConfig(JSON.stringify({ agid: 'a', base_url: 'https://ti.vendor.lan/api/v1', token: 't', url_feed: true, state_dir: state(b), ...extra }), join(lab.dir, 'config.json'));
  configs = {
    unbound: config('unbound', { dns_plugin: 'unbound', unbound_control: lab.control, unbound_conf_file: lab.includeFile }),
    rpz: config('rpz', { dns_plugin: 'rpz', rpz_file: lab.rpzFile, rpz_reload: [...lab.control, 'auth_zone_reload', 'rpz.wcf'] }),
    dnsmasq: config('dnsmasq', { dns_plugin: 'dnsmasq', dnsmasq_file: serversFile, dnsmasq_reload: ['pkill', '-HUP', '-x', '-F', pidFile, 'dnsmasq'] }),
    'dry-run': config('dry-run', { dns_plugin: 'rpz', rpz_file: join(lab.dir, 'never-written.zone') }),
  };
}, 60_000);

afterAll(async () => {
  await lab?.destroy();
});

type Backend = keyof typeof configs;
const fileOf = (b: Backend) => {
  const c = configs[b];
  if (b === 'unbound') return c.unbound_conf_file;
  if (b === 'rpz') return c.rpz_file!;
  if (b === 'dnsmasq') return c.dnsmasq_file;
  return join(c.state_dir, 'dns-dry-run.zone');
};
const formatOf = (b: Backend) => (b === 'unbound' ? 'unbound' : b === 'dnsmasq' ? 'dnsmasq' : 'rpz');
/** The names the backend must hold after being given `given`: the valid ones the policy does not protect. */
function expected(b: Backend, given: readonly string[]): string[] {
  const policy = policyOf(b);
  const rpz = b === 'rpz' || b === 'dry-run';
  // unbound-control lists a name of 253 characters cut short (`xxx.&`): the agent gives unbound none.
  const unbound = b === 'unbound';
  return [...new Set(given.filter((n) => valid(n) && (!rpz || fitsRpz(n)) && (!unbound || n.length < 253) && policy.veto(n) === null))].sort();
}

/** The file holds only well-formed lines, exactly for `want`; for unbound, its runtime zones too. */
async function holdsExactly(b: Backend, want: readonly string[], leftAlone: readonly string[] = []): Promise<void> {
  const held = namesIn(formatOf(b), readFileSync(fileOf(b), 'utf8'));
  const kept = want.filter((n) => !leftAlone.includes(n));
  expect(held, `${b}: the names in ${fileOf(b)}`).toEqual(kept);
  if (b === 'unbound') {
    // Left alone only where unbound has a zone of its own (a built-in one such as localhost).
    for (const n of leftAlone) expect(builtinZones.has(n), n).toBe(true);
    const added = [...(await zoneNames())].filter((z) => !builtinZones.has(z)).sort();
    expect(added, 'unbound: the zones it runs beside its own').toEqual(kept);
  }
}

/** The rules as on a host whose resolv.conf searches corp.example (names the generators make too). */
const policyOf = (b: Backend) => domainPolicyOf(configs[b], { searchDomains: [{ name: 'corp.example', source: '/etc/resolv.conf' }] });

const BACKENDS: Backend[] = ['dnsmasq', 'unbound', 'rpz', 'dry-run'];

describe.each(BACKENDS)('whatever strings reach the %s backend, its file holds only well-formed lines for valid names', (b) => {
  it('a caller passing anything at all to the plugin', async () => {
    const plugin = createDnsPlugin(configs[b], { logger, dryRun: b === 'dry-run', policy: policyOf(b) });
    await fc.assert(
      fc.asyncProperty(callerNames, async (names) => {
        const r = await plugin.apply(names);
        await holdsExactly(b, expected(b, names), r.leftAlone.map((l) => l.name));
      }),
      // The resolver keeps what a failed run gave it: the first failing input is the one to report, unshrunk.
      { numRuns: 100, endOnFailure: true },
    );
  }, 180_000);

  it('a URL feed carrying anything at all, through the cycle\'s step (selection, shrink guard, history)', async () => {
    const config = configs[b];
    const scoring = createScoring({});
    const policy = policyOf(b);
    await fc.assert(
      fc.asyncProperty(feedUrls, async (urls) => {
        const now = Math.floor(Date.now() / 1000);
        const cache = new UrlCache();
        for (const u of urls) cache.upsert(u, 9, now, -1);
        const selection = selectDomains({ now, urls: cache, scoring, threshold: 4, maximumDomains: 1000, policy });
        for (const d of selection.domains) expect(valid(d.name), JSON.stringify(d.name)).toBe(true);
        const plan: DnsPlan = { selection, threshold: 4, maximumDomains: 1000, urls: cache.size, invalidUrls: cache.invalid, full: true, cursor: now, pages: 1, cache, resolver: { plugin: config.dns_plugin, files: [] }, policy };
        const r = await applyDnsStep({ config, logger, dryRun: b === 'dry-run', force: true, now }, plan, true);
        await holdsExactly(b, expected(b, selection.domains.map((d) => d.name)), r.result?.leftAlone.map((l) => l.name));
      }),
      { numRuns: 40, endOnFailure: true },
    );
  }, 180_000);
});

describe('unbound and a name of the longest length DNS allows (253 characters)', () => {
  it('is never given to unbound: unbound-control lists it cut short (`xxx.&`), so its zone could never be removed again', async () => {
    const plugin = createDnsPlugin(configs.unbound, { logger, dryRun: false, policy: policyOf('unbound') });
    const long = ofLength(253, 63);
    await plugin.apply([long, 'evil.example']);
    expect(await plugin.list()).toEqual(['evil.example']);
    await plugin.apply([]);
    expect([...(await zoneNames())].filter((z) => !builtinZones.has(z))).toEqual([]);
    // One character less is listed whole, and removed.
    await plugin.apply([ofLength(252, 63)]);
    await plugin.apply([]);
    expect([...(await zoneNames())].filter((z) => !builtinZones.has(z))).toEqual([]);
  });
});
