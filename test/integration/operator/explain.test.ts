// `explain ADDRESS`: every verdict on indicators chosen in the simulator, from the caches a real sync wrote.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

/**
 * Scores above 10 and a threshold of 20: the simulator's own indicators (scores 1..10) all stay
 * below it, so only the indicators chosen here compete for the cap, whose place is known.
 */
const THRESHOLD = 20;
const IP = {
  scoreA: '203.0.113.10',
  scoreB: '203.0.113.11',
  over: '203.0.113.12',
  below: '203.0.113.13',
  whitelisted: '203.0.113.20',
  manual: '203.0.113.30',
  absent: '203.0.113.99',
  allowlisted: '192.0.2.50',
  loopback: '127.0.0.2',
  wide: '44.0.0.0/7',
  vetoedNet: '198.51.100.0/24',
  whitelistedInNet: '198.51.100.7',
} as const;

interface ExplainJson {
  address: string;
  blocked: boolean;
  verdict: string;
  rule: { record: string | null; kind: string | null; rank: number | null; maximum_rules: number; score_threshold: number; min_prefix: number; protected_by: { ip: string; source: string; detail: string | null } | null; whitelisted_by: string | null };
  protected_by: { ip: string; source: string } | null;
  records: { ip: string; covers: boolean; stored_score: number; ts: number; score: number; threshold: number; below_threshold_at: number | null; outcome: string; rank: number | null }[];
  manual: { ip: string; decision: string; covers: boolean }[];
  in_kernel: boolean | null;
  kernel: { plugin: string; entries: { ip: string }[]; error: string | null };
  hits: unknown;
  generated_at: number;
  feed_as_of: number;
  refreshed: boolean;
}

let sim: Simulator;
let cfg: { path: string; dir: string };
/** Manual blocks kept by the selection (the simulator's own, plus IP.manual): they rank first. */
let manualKept = 0;

const explain = async (address: string, ...extra: string[]) => {
  const r = await runCli(['explain', address, '--json', '--config', cfg.path, ...extra]);
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as ExplainJson;
};

beforeAll(async () => {
  sim = await startSimulator({ indicators: 300, seed: 23, agentConfig: { maximum_rules: '1000', score_threshold: String(THRESHOLD), sync_time: '5', running: 'true' } });
  for (const [ip, score] of [[IP.scoreA, 60], [IP.scoreB, 55], [IP.over, 50], [IP.below, 15], [IP.whitelisted, 60], [IP.allowlisted, 60], [IP.loopback, 60]] as const) {
    sim.upsertIndicator({ ip, score });
  }
  sim.upsertIndicator({ ip: IP.wide, score: 60, is_network: true });
  sim.upsertIndicator({ ip: IP.vetoedNet, score: 60, is_network: true });
  sim.setDecision(IP.whitelisted, 0);
  sim.setDecision(IP.whitelistedInNet, 0);
  sim.setDecision(IP.manual, 1);
  cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, allowlist: [IP.allowlisted] });
  // First sync: how many manual blocks the selection keeps; then a cap with room for exactly two score entries.
  const first = await runCli(['sync', '--dry-run', '--config', cfg.path]);
  expect(first.exitCode, first.stderr).toBe(0);
  const applied = JSON.parse(readFileSync(join(cfg.dir, 'state', 'applied-dry-run.json'), 'utf8')) as { entries: { reason: string }[] };
  manualKept = applied.entries.filter((e) => e.reason === 'manual').length;
  sim.setAgentConfig(sim.agid, { maximum_rules: String(manualKept + 2) });
  const second = await runCli(['sync', '--dry-run', '--config', cfg.path]);
  expect(second.exitCode, second.stderr).toBe(0);
});
afterAll(async () => {
  await sim?.close();
  if (cfg) rmSync(cfg.dir, { recursive: true, force: true });
});

describe('explain ADDRESS, from the last pull (no network)', () => {
  it('score: blocked by its feed record, with its rank, scores, the moment it falls below, and held by the backend', async () => {
    const e = await explain(IP.scoreA);
    expect(e).toMatchObject({ address: IP.scoreA, blocked: true, verdict: 'score', in_kernel: true, hits: null, refreshed: false });
    expect(e.rule).toMatchObject({ record: IP.scoreA, kind: 'feed', rank: manualKept + 1, maximum_rules: manualKept + 2, score_threshold: THRESHOLD });
    expect(e.records).toHaveLength(1);
    const r = e.records[0]!;
    expect(r).toMatchObject({ ip: IP.scoreA, covers: true, stored_score: 60, threshold: THRESHOLD, outcome: 'selected', rank: manualKept + 1 });
    expect(r.score).toBeGreaterThan(THRESHOLD);
    expect(r.score).toBeLessThanOrEqual(60);
    expect(r.below_threshold_at).toBeGreaterThan(e.generated_at);
    // The same instant the sync gave the entry (its kernel timeout).
    const applied = JSON.parse(readFileSync(join(cfg.dir, 'state', 'applied-dry-run.json'), 'utf8')) as { entries: { cidr: string; expiresAt: number | null }[] };
    expect(r.below_threshold_at).toBe(Math.floor(applied.entries.find((x) => x.cidr === IP.scoreA)!.expiresAt!));
    expect(e.kernel).toMatchObject({ plugin: 'dry-run', entries: [{ ip: IP.scoreA }], error: null });
    expect(e.feed_as_of).toBeLessThanOrEqual(e.generated_at);
  });

  it('manual: the manual block decides, and the address is held', async () => {
    const e = await explain(IP.manual);
    expect(e).toMatchObject({ blocked: true, verdict: 'manual', in_kernel: true });
    expect(e.rule).toMatchObject({ record: IP.manual, kind: 'manual' });
    expect(e.manual).toEqual([expect.objectContaining({ ip: IP.manual, decision: 'block', covers: true })]);
  });

  it('over_cap: would be blocked, but ranks past maximum_rules; not held', async () => {
    const e = await explain(IP.over);
    expect(e).toMatchObject({ blocked: false, verdict: 'over_cap', in_kernel: false });
    expect(e.rule).toMatchObject({ record: IP.over, rank: manualKept + 3, maximum_rules: manualKept + 2 });
    expect(e.records[0]!.score).toBeGreaterThanOrEqual(THRESHOLD);
  });

  it('below_threshold: decayed score under the threshold, with the moment it fell below', async () => {
    const e = await explain(IP.below);
    expect(e).toMatchObject({ blocked: false, verdict: 'below_threshold', in_kernel: false });
    expect(e.records[0]!).toMatchObject({ stored_score: 15, outcome: 'below_threshold', rank: null });
    expect(e.records[0]!.below_threshold_at).toBeLessThanOrEqual(e.generated_at);
  });

  it('whitelist: the indicator itself, and a network vetoed by a whitelisted address inside it', async () => {
    const own = await explain(IP.whitelisted);
    expect(own).toMatchObject({ blocked: false, verdict: 'whitelist' });
    expect(own.rule.whitelisted_by).toBe(IP.whitelisted);
    // Another address of the /24: not blocked, because the /24 holds a whitelisted address.
    const net = await explain('198.51.100.9');
    expect(net).toMatchObject({ blocked: false, verdict: 'whitelist' });
    expect(net.rule).toMatchObject({ record: IP.vetoedNet, whitelisted_by: IP.whitelistedInNet });
    expect(net.manual).toEqual([]);
  });

  it('allowlist and protected name the member and its source', async () => {
    const allow = await explain(IP.allowlisted);
    expect(allow).toMatchObject({ blocked: false, verdict: 'allowlist' });
    expect(allow.rule.protected_by).toMatchObject({ ip: IP.allowlisted, source: 'allowlist' });
    expect(allow.protected_by).toMatchObject({ source: 'allowlist' });
    const lo = await explain(IP.loopback);
    expect(lo).toMatchObject({ blocked: false, verdict: 'protected' });
    expect(lo.rule.protected_by).toMatchObject({ ip: '127.0.0.0/8', source: 'loopback' });
  });

  it('too_wide: a network wider than min_prefix', async () => {
    const e = await explain('44.1.2.3');
    expect(e).toMatchObject({ blocked: false, verdict: 'too_wide' });
    expect(e.rule).toMatchObject({ record: IP.wide, min_prefix: 8 });
  });

  it('not_in_feed: nothing covers it; a network lists what lies inside it', async () => {
    expect(await explain(IP.absent)).toMatchObject({ blocked: false, verdict: 'not_in_feed', records: [], manual: [], in_kernel: false });
    const net = await explain('203.0.113.0/24');
    expect(net).toMatchObject({ address: '203.0.113.0/24', verdict: 'not_in_feed', in_kernel: false });
    expect(net.records.map((r) => r.ip)).toEqual(expect.arrayContaining([IP.scoreA, IP.over, IP.below]));
    expect(net.records.every((r) => !r.covers)).toBe(true);
    expect(net.kernel.entries.map((k) => k.ip)).toEqual(expect.arrayContaining([IP.scoreA, IP.scoreB, IP.manual]));
  });

  it('prints a readable answer without --json', async () => {
    const r = await runCli(['explain', IP.over, '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`${IP.over}: not blocked (over_cap)`);
    expect(lines[1]).toBe(`  rule:   feed record ${IP.over} would be blocked, but it ranks ${manualKept + 3} and maximum_rules is ${manualKept + 2}`);
    expect(r.stdout).toMatch(/^ {2}kernel: not held \(dry-run\)$/m);
    expect(r.stdout).toMatch(/^from the pull of \d{4}-\d\d-\d\dT[\d:]+Z \(.* ago\); threshold 20, /m);
  });

  it('a kernel that cannot be read: the verdict still, in_kernel null with the reason', async () => {
    // Same state dir, the ipset backend inside a namespace that does not exist.
    const config = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    const path = join(cfg.dir, 'config-no-netns.json');
    writeFileSync(path, JSON.stringify({ ...config, plugin: 'ipset', netns: 'wcf-explain-absent' }), { mode: 0o600 });
    const r = await runCli(['explain', IP.scoreA, '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const e = JSON.parse(r.stdout) as ExplainJson;
    expect(e).toMatchObject({ blocked: true, verdict: 'score', in_kernel: null, kernel: { plugin: 'ipset', entries: [] } });
    expect(e.kernel.error).toMatch(/wcf-explain-absent/);
    const text = await runCli(['explain', IP.scoreA, '--config', path]);
    expect(text.stdout).toMatch(/^ {2}kernel: could not be read \(.*wcf-explain-absent/m);
  });

  it('a malformed address is exit 2 naming the argument, before the config is read', async () => {
    for (const bad of ['203.0.113.256', '203.0.113.0/33', '1.2.3']) {
      const r = await runCli(['explain', bad, '--config', '/nonexistent/config.json']);
      expect(r.exitCode, bad).toBe(2);
      expect(r.stderr).toMatch(/ADDRESS: /);
    }
    // Not address-shaped: taken as a host name, which this is not; the escape never reaches the terminal.
    const r = await runCli(['explain', '\u001b[31m1.2.3.4', '--config', '/nonexistent/config.json']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/NAME\|URL: /);
    expect(r.stderr).not.toContain('\u001b');
  });

  it('with nothing cached yet: exit 4 saying a sync writes the cache', async () => {
    const empty = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token });
    try {
      const r = await runCli(['explain', IP.scoreA, '--config', empty.path]);
      expect(r.exitCode).toBe(4);
      expect(r.stderr).toMatch(/no cached feed in .*a successful sync/);
    } finally {
      rmSync(empty.dir, { recursive: true, force: true });
    }
  });
});

describe('explain --refresh', () => {
  it('pulls first and answers from it, applying and writing nothing; without it the API is not asked', async () => {
    const fresh = '203.0.113.40';
    sim.upsertIndicator({ ip: fresh, score: 70 });
    const rules = join(cfg.dir, 'state', 'dry-run.ipset');
    const before = readFileSync(rules, 'utf8');
    const state = readFileSync(join(cfg.dir, 'state', 'state.json'), 'utf8');

    sim.clearRequests();
    expect(await explain(fresh)).toMatchObject({ verdict: 'not_in_feed', refreshed: false });
    expect(sim.requests).toHaveLength(0);
    const e = await explain(fresh, '--refresh');
    expect(sim.requests.some((r) => r.path.startsWith('/api/v1/ips'))).toBe(true);
    expect(e).toMatchObject({ blocked: true, verdict: 'score', in_kernel: false, refreshed: true });
    expect(readFileSync(rules, 'utf8')).toBe(before);
    expect(readFileSync(join(cfg.dir, 'state', 'state.json'), 'utf8')).toBe(state);

    // The API down: explain still answers from the cache.
    const config = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    writeFileSync(cfg.path, JSON.stringify({ ...config, base_url: 'http://127.0.0.1:9/api/v1', connect_timeout_ms: 500 }));
    expect(await explain(IP.scoreA)).toMatchObject({ verdict: 'score' });
    const down = await runCli(['explain', IP.scoreA, '--refresh', '--config', cfg.path]);
    expect(down.exitCode).toBe(3);
  });
});

describe('explain and the local overrides', () => {
  it('names the local allow covering a blocked address and says it is not blocked here; a local block the same way', async () => {
    const allow = await runCli(['allow', IP.scoreA, '--note', 'our partner', '--config', cfg.path]);
    expect(allow.exitCode, allow.stderr).toBe(0);
    try {
      const j = (await explain(IP.scoreA)) as ExplainJson & { local_override: { ip: string; action: string; expires: number | null; note: string | null } | null };
      expect(j.verdict).toBe('score'); // what the feeds decided
      expect(j.blocked).toBe(false); // what holds on this host
      expect(j.local_override).toEqual({ ip: IP.scoreA, action: 'allow', expires: null, note: 'our partner' });
      const text = await runCli(['explain', IP.scoreA, '--config', cfg.path]);
      expect(text.stdout).toMatch(new RegExp(`local override: allow ${IP.scoreA.replace(/\./g, '\\.')} until removed \\(our partner\\): it beats the feeds`));
    } finally {
      expect((await runCli(['overrides', 'remove', IP.scoreA, '--config', cfg.path])).exitCode).toBe(0);
    }
    expect(((await explain(IP.scoreA)) as ExplainJson & { local_override: unknown }).local_override).toBeNull();
    expect((await runCli(['block', IP.absent, '--for', '1h', '--config', cfg.path])).exitCode).toBe(0);
    try {
      const j = (await explain(IP.absent)) as ExplainJson & { local_override: { action: string; expires: number | null } | null };
      expect(j.verdict).toBe('not_in_feed');
      expect(j.blocked).toBe(true);
      expect(j.local_override).toMatchObject({ action: 'block', expires: expect.any(Number) });
      // The address became protected since (added to the allowlist): no write blocks it, whatever the override says.
      const config = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
      const path = join(cfg.dir, 'config-allowlisted.json');
      writeFileSync(path, JSON.stringify({ ...config, allowlist: [IP.absent] }), { mode: 0o600 });
      const now = await runCli(['explain', IP.absent, '--config', path]);
      expect(now.stdout.split('\n').slice(0, 2)).toEqual([`${IP.absent}: not blocked (protected)`, '  feeds:  not blocked (not_in_feed)']);
      expect(now.stdout).toContain(`local override: block ${IP.absent} until `);
      expect(now.stdout).toMatch(/: not applied, the address is protected$/m);
      const nowJson = JSON.parse((await runCli(['explain', IP.absent, '--json', '--config', path])).stdout) as ExplainJson;
      expect(nowJson).toMatchObject({ blocked: false, verdict: 'not_in_feed', protected_by: { ip: IP.absent, source: 'allowlist' } });
    } finally {
      await runCli(['overrides', 'remove', IP.absent, '--config', cfg.path]);
    }
  });
});
