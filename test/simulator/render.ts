/**
 * JSON rendering of feed pages, built directly as strings (no intermediate objects) so
 * a 1000-item page costs well under a millisecond. Descriptive fields (ip_info, info)
 * come from small fixed pools selected by the item's info seed.
 *
 * `full=no` omits: `ip_info`, and `info.stix_bundles`, `info.attack_infos`, `info.notes`.
 * `full=yes` returns every spec field.
 */
import { mix32 } from './ipspace.js';

export interface ItemView {
  gid: string;
  ip: string;
  ts: number;
  entryTs: number;
  isNetwork: boolean;
  score: number;
  infoSeed: number;
  /** Overrides for items reported through POST /ips. */
  source?: string | undefined;
  notes?: string | undefined;
}

const IP_INFO = [
  ['example-hosting.net', 'Example Hosting Ltd', 'AS64500', 'EU', 'Europe', 'NL', 'Netherlands'],
  ['cloudsample.com', 'CloudSample Inc.', 'AS64501', 'NA', 'North America', 'US', 'United States'],
  ['fastvps.example', 'FastVPS LLC', 'AS64502', 'EU', 'Europe', 'DE', 'Germany'],
  ['telco-one.example', 'Telco One', 'AS64503', 'AS', 'Asia', 'CN', 'China'],
  ['broadband.example', 'Broadband Co', 'AS64504', 'SA', 'South America', 'BR', 'Brazil'],
  ['datacenter.example', 'Datacenter SRL', 'AS64505', 'EU', 'Europe', 'RO', 'Romania'],
  ['mobile-net.example', 'Mobile Net', 'AS64506', 'AS', 'Asia', 'IN', 'India'],
  ['hostingplus.example', 'Hosting Plus', 'AS64507', 'EU', 'Europe', 'RU', 'Russia'],
  ['isp-north.example', 'ISP North', 'AS64508', 'NA', 'North America', 'CA', 'Canada'],
  ['africa-link.example', 'Africa Link', 'AS64509', 'AF', 'Africa', 'ZA', 'South Africa'],
  ['pacific-net.example', 'Pacific Net', 'AS64510', 'OC', 'Oceania', 'AU', 'Australia'],
  ['seoul-idc.example', 'Seoul IDC', 'AS64511', 'AS', 'Asia', 'KR', 'Korea'],
].map(
  ([as_domain, as_name, asn, continent, continent_name, country, country_name]) =>
    JSON.stringify({ as_domain, as_name, asn, continent, continent_name, country, country_name }),
);

const SOURCES = ['honeypot', 'ssh-bruteforce', 'web-scanner', 'spam-trap', 'partner-feed', 'ids-alert', 'botnet-c2', 'manual'];
const SOURCE_SETS: string[] = [];
for (let k = 0; k < 32; k++) {
  const set = new Set([SOURCES[k % 8]!]);
  if (k >= 8) set.add(SOURCES[(k * 3 + 1) % 8]!);
  if (k >= 24) set.add(SOURCES[(k * 5 + 2) % 8]!);
  SOURCE_SETS.push(JSON.stringify([...set]));
}

const TECHNIQUES = [
  { technique_id: 'T1110', technique: 'Brute Force', tactic: 'credential-access' },
  { technique_id: 'T1046', technique: 'Network Service Discovery', tactic: 'discovery' },
  { technique_id: 'T1190', technique: 'Exploit Public-Facing Application', tactic: 'initial-access' },
  { technique_id: 'T1071', technique: 'Application Layer Protocol', tactic: 'command-and-control' },
  { technique_id: 'T1498', technique: 'Network Denial of Service', tactic: 'impact' },
];
const ATTACK_SETS = ['[]', ...TECHNIQUES.map((t) => JSON.stringify([t])), JSON.stringify(TECHNIQUES.slice(0, 2))];
const NOTES = ['[]', '[]', '["seen in multiple sensors"]', '["automated report"]', '["repeat offender","escalated"]'];

export const DEFAULT_EVAL =
  'scoreTimeZero / (1 + Math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))';
export const DEFAULT_EXEC_PYTHON =
  'scoreTimeZero / (1 + math.exp((3 / scoreTimeZero) * (current_time / 3600 - 2.5 * scoreTimeZero)))';

const PAD2: string[] = [];
for (let k = 0; k < 100; k++) PAD2.push(k < 10 ? `0${k}` : String(k));
const DATES = new Map<number, string>();

/** ISO 8601 UTC of an epoch-s value, same text as Date#toISOString (dates cached per day). */
export function isoSeconds(ts: number): string {
  const day = Math.floor(ts / 86_400);
  let date = DATES.get(day);
  if (date === undefined) {
    if (DATES.size > 4096) DATES.clear();
    date = new Date(day * 86_400_000).toISOString().slice(0, 11);
    DATES.set(day, date);
  }
  const s = ts - day * 86_400;
  const m = Math.floor(s / 60);
  return date + PAD2[Math.floor(m / 60)] + ':' + PAD2[m % 60] + ':' + PAD2[s % 60] + '.000Z';
}

/** JSON string literal with every non-ASCII character escaped (so a page is pure ASCII). */
export function jsonAscii(v: string): string {
  return JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function hex8(x: number): string {
  return x.toString(16).padStart(8, '0');
}

function stixBundles(seed: number): string {
  if (seed % 3 === 0) return '[]';
  const a = mix32(seed ^ 0x51ed);
  const b = mix32(a);
  const c = mix32(b);
  const id = `${hex8(a)}-${hex8(b).slice(0, 4)}-4${hex8(b).slice(5)}-a${hex8(c).slice(1, 4)}-${hex8(c).slice(4)}${hex8(mix32(c))}`;
  return `[{"type":"bundle","id":"bundle--${id}","spec_version":"2.1"}]`;
}

/** JSON of one feed item (pure ASCII: ip and gid are validated, free text is escaped). */
export function renderItem(v: ItemView, full: boolean): string {
  const seed = v.infoSeed;
  const r = mix32(seed);
  let s = '{"gid":"' + v.gid + '","ip":"' + v.ip + '","ts":' + v.ts + ',"entry_ts":' + v.entryTs + ',"is_network":' + v.isNetwork;
  if (full) s += ',"ip_info":' + IP_INFO[seed % IP_INFO.length];
  const sources = v.source === undefined ? SOURCE_SETS[(seed >>> 5) % 32] : '[' + jsonAscii(v.source) + ']';
  s += ',"score":' + v.score + ',"info":{"members":' + (1 + (r % 12)) + ',"events":' + (1 + ((r >>> 4) % 400)) + ',"sources":' + sources;
  if (full) {
    const notes = v.notes === undefined ? NOTES[(r >>> 12) % NOTES.length] : '[' + jsonAscii(v.notes) + ']';
    s += ',"stix_bundles":' + stixBundles(seed) + ',"attack_infos":' + ATTACK_SETS[(r >>> 16) % ATTACK_SETS.length] + ',"notes":' + notes;
  }
  return (
    s + '},"idx_ts":"' + isoSeconds(v.ts) + '","idx_entry_ts":"' + isoSeconds(v.entryTs) +
    '","delay":' + ((r >>> 20) % 4 === 0 ? 60 : 0) + ',"dec":' + ((r >>> 22) % 101) / 100 + '}'
  );
}

export interface HeaderOptions {
  now: number;
  pageSize: number;
  userJson: string;
  eval?: string;
  execPython?: string;
}

export function renderHeader(o: HeaderOptions): string {
  return (
    `{"type":"ipv4","version":2,"ts":"${o.now}","page_size":${o.pageSize},"delay":0,` +
    `"eval":${jsonAscii(o.eval ?? DEFAULT_EVAL)},"exec_python":${jsonAscii(o.execPython ?? DEFAULT_EXEC_PYTHON)},` +
    `"user":${o.userJson}}`
  );
}

export function renderUser(gid: string): string {
  return JSON.stringify({
    guid: 'b6a1c0de-0000-4000-8000-00000000a9e1',
    name: 'Sim',
    surname: 'User',
    username: 'sim-user',
    role: 2,
    unsuccessful_login: 0,
    member_of: { gid, name: 'Simulated Org', trust: 0.8, delay: '0' },
  });
}

/** A feed page; items are rendered one by one into a single string. */
export function renderPage<T>(header: string, items: Iterable<T>, render: (item: T) => string): string {
  let s = '{"header":' + header + ',"body":[';
  let first = true;
  for (const it of items) {
    s += first ? render(it) : ',' + render(it);
    first = false;
  }
  return s + ']}';
}
