import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

/** The URL and file admin commands, `explain`, `plan` and `status` for names, and the dry-run DNS plugin, against the simulator. */

let sim: Simulator;
let cfg: { path: string; dir: string };

beforeAll(async () => {
  sim = await startSimulator({ indicators: 30, urls: 500, seed: 2, agentConfig: { score_threshold: '4' } });
  const now = sim.clock.now();
  sim.upsertUrl('https://evil-site.example/a', { score: 9, ts: now });
  sim.upsertUrl('https://docs.google.com/x', { score: 10, ts: now });
  sim.upsertUrl('https://white.example/1', { score: 9, ts: now });
  sim.upsertUrl('https://white.example/2', { score: 1, ts: now, tags: ['whitelisted'] });
  sim.upsertUrl('https://low.example/', { score: 1, ts: now });
  sim.upsertUrl('http://show.example/\u001b[31mred\u202eevil', { score: 2, ts: now });
  cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, url_feed: true, dns_plugin: 'unbound', retries: 0 });
});
afterAll(() => sim.close());

const cli = (...args: string[]) => runCli([...args, '--config', cfg.path]);

describe('urls list / decide', () => {
  it('lists records as JSON and as a table with control characters escaped', async () => {
    const j = await cli('urls', 'list', '--limit', '5', '--json');
    expect(j.exitCode, j.stderr).toBe(0);
    const out = JSON.parse(j.stdout) as { count: number; urls: { url: string }[]; next_ts: number };
    expect(out.count).toBe(5);
    expect(typeof out.next_ts).toBe('number');
    const t = await cli('urls', 'list', '--since', '1h', '--limit', '1999');
    expect(t.exitCode, t.stderr).toBe(0);
    expect(t.stdout).toContain('show.example');
    expect(t.stdout).toContain('\\x1b[31mred\\u202eevil');
    expect(t.stdout).not.toMatch(/[\u001b\u202e]/);
  });

  it('rejects bad values naming the flag, before any request', async () => {
    sim.clearRequests();
    for (const [args, flag] of [
      [['urls', 'list', '--limit', '0'], '--limit'],
      [['urls', 'list', '--since', 'yesterday'], '--since'],
      [['urls', 'decide', 'not a url', 'block'], 'URL'],
      [['urls', 'decide', 'ftp://x.example/', 'block'], 'URL'],
      [['urls', 'decide', 'https://x.example/', 'maybe'], 'DECISION'],
    ] as const) {
      const r = await cli(...args);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toContain(`${flag}:`);
    }
    expect(sim.requests).toEqual([]);
  });

  it('decide sends the URL percent-encoded as one path segment; the record gets the decision tags', async () => {
    const url = 'https://Phish.example/a b/c?x=1&y=%2F#frag';
    let r = await cli('urls', 'decide', url, 'block');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(sim.urlRecord(url)?.tags).toContain('blacklisted');
    r = await cli('urls', 'decide', url, 'allow');
    expect(sim.urlRecord(url)?.tags).toContain('whitelisted');
    r = await cli('urls', 'decide', url, 'none');
    expect(sim.urlRecord(url)?.tags).not.toContain('whitelisted');
  });
});

describe('file DIGEST|PATH', () => {
  it('hashes a PATH with SHA-256 and exits 5 when the platform knows it as malicious', async () => {
    const p = join(cfg.dir, 'payload.bin');
    writeFileSync(p, Buffer.alloc(3_000_000, 7));
    const sha = createHash('sha256').update(readFileSync(p)).digest('hex');
    let r = await cli('file', p);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('unknown to the platform');
    sim.addFile({ sha256: sha, score: 9 });
    r = await cli('file', p, '--json');
    expect(r.exitCode).toBe(5);
    expect(JSON.parse(r.stdout)).toMatchObject({ digest: sha, verdict: 'malicious', record: { sha256: sha.toUpperCase() } });
    expect((await cli('file', sha.toUpperCase())).stdout).toContain('KNOWN MALICIOUS');
  });

  it('--deep finds what the main store does not; a whitelisted record is clean (exit 0)', async () => {
    const md5 = 'e'.repeat(32);
    sim.addFile({ md5, deep: true });
    expect((await cli('file', md5)).exitCode).toBe(0);
    expect((await cli('file', md5, '--deep')).exitCode).toBe(5);
    const clean = 'f'.repeat(40);
    sim.addFile({ sha1: clean, tags: ['whitelisted'] });
    const r = await cli('file', clean);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('whitelisted');
  });

  it('neither a digest nor a readable file is a usage error', async () => {
    const r = await cli('file', 'abc123');
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('DIGEST|PATH:');
  });
});

describe('plan, sync --dry-run, status and explain for names', () => {
  it('plan --json lists the domains with reason, score, expiry and URL count', async () => {
    const r = await cli('plan', '--json');
    expect(r.exitCode, r.stderr).toBe(0);
    const p = JSON.parse(r.stdout) as { domains: { name: string; reason: string; score: number; expires: number | null; urls: number }[]; dns: { skipped: Record<string, number> } };
    const evil = p.domains.find((d) => d.name === 'evil-site.example')!;
    expect(evil).toMatchObject({ reason: 'score', urls: 1 });
    expect(evil.expires).toBeGreaterThan(sim.clock.now());
    const names = p.domains.map((d) => d.name);
    for (const n of ['docs.google.com', 'white.example', 'low.example']) expect(names).not.toContain(n);
    expect(p.dns.skipped.shared_platform).toBeGreaterThan(0);
  });

  it('sync --dry-run renders the zone instead of touching a resolver; status counts names by reason', async () => {
    const r = await cli('sync', '--once', '--dry-run');
    expect(r.exitCode, r.stderr).toBe(0);
    const zone = readFileSync(join(cfg.dir, 'state', 'dns-dry-run.zone'), 'utf8');
    expect(zone).toContain('evil-site.example CNAME .');
    expect(zone).not.toContain('docs.google.com');
    const s = JSON.parse((await cli('status', '--json')).stdout) as { dns: { applied: number; by_reason: Record<string, number>; plugin: string } };
    expect(s.dns.plugin).toBe('dry-run');
    expect(s.dns.applied).toBe(s.dns.by_reason.manual! + s.dns.by_reason.score!);
    expect(s.dns.applied).toBeGreaterThan(0);
    expect((await cli('status')).stdout).toMatch(/names blocked\s+\d+ \(\d+ manual, \d+ score\)/);
  });

  it('explain gives the verdict for a name or URL in the selection\'s words', async () => {
    const verdict = async (t: string) => (JSON.parse((await cli('explain', t, '--json')).stdout) as { verdict: string }).verdict;
    expect(await verdict('evil-site.example')).toBe('score');
    expect(await verdict('https://www.evil-site.example/x')).toBe('covered');
    expect(await verdict('docs.google.com')).toBe('shared_platform');
    expect(await verdict('github.io')).toBe('public_suffix');
    expect(await verdict('white.example')).toBe('whitelist');
    expect(await verdict('low.example')).toBe('threshold');
    expect(await verdict('nowhere.example')).toBe('not_in_feed');
    const t = await cli('explain', 'EVIL-SITE.example.');
    expect(t.stdout).toContain('evil-site.example: score (blocked');
  });

  it('the shrink guard covers the names: a pull that would drop most of them is held back one cycle', async () => {
    const names = () => readFileSync(join(cfg.dir, 'state', 'dns-dry-run.zone'), 'utf8').split('\n').filter((l) => / CNAME \.$/.test(l) && !l.startsWith('*.')).length;
    const before = names();
    expect(before).toBeGreaterThan(2);
    const c = JSON.parse(readFileSync(cfg.path, 'utf8')) as Record<string, unknown>;
    // Only the name set shrinks (the cap on names does not touch the firewall's selection).
    writeFileSync(cfg.path, JSON.stringify({ ...c, maximum_domains: 1 }));
    let r = await cli('sync', '--once', '--dry-run', '--json');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ code: 50, message: expect.stringContaining('names:') });
    expect(names()).toBe(before);
    r = await cli('sync', '--once', '--dry-run', '--json');
    expect((JSON.parse(r.stdout) as { code: number }).code).toBe(0);
    expect(names()).toBe(1);
    writeFileSync(cfg.path, JSON.stringify(c));
  });
});
