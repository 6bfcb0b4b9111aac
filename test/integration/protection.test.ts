// Lock-out protection end to end: a manual block (E2 decision on the simulator) of the host's own
// address, of a network holding it, or of loopback (where the simulator's API listens) never reaches
// the plan or the rules. The API's own member (api_server) is not what keeps loopback out here, the
// built-in loopback range is: test/unit/agent/protected.test.ts checks api_server by itself.
import { readFileSync, rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';

interface PlanJson {
  counts: { selected: number; skipped: { allowlist: number } };
  entries: { ip: string; reason: string }[];
}

let sim: Simulator;
const dirs: string[] = [];

/** A non-loopback IPv4 address of this host (the one a lock-out would cut off). */
function hostAddress(): string {
  const a = Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .find((x) => x.family === 'IPv4' && !x.internal && !x.address.startsWith('127.'));
  if (!a) throw new Error('this test needs a non-loopback IPv4 address on some interface');
  return a.address;
}

/** The /24 holding an address. */
const net24 = (ip: string) => `${ip.split('.').slice(0, 3).join('.')}.0/24`;

beforeAll(async () => {
  sim = await startSimulator({
    indicators: 800,
    seed: 5,
    agentConfig: { maximum_rules: '500', score_threshold: '3', sync_time: '5', running: 'true' },
  });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function config() {
  const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token });
  dirs.push(c.dir);
  return c;
}

async function plan(path: string): Promise<PlanJson> {
  const r = await runCli(['plan', '--json', '--config', path]);
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as PlanJson;
}

describe('lock-out protection', () => {
  it('manual blocks of the host address, its network and loopback (the API here) are skipped; others are applied', async () => {
    const host = hostAddress();
    const apiHost = new URL(sim.url).hostname; // 127.0.0.1: the simulator listens on loopback
    const { path, dir } = config();
    const before = await plan(path);

    const protectedBlocks = [host, net24(host), apiHost];
    const control = '198.51.100.77';
    for (const ip of [...protectedBlocks, control]) sim.setDecision(ip, 1);
    try {
      const after = await plan(path);
      const ips = after.entries.map((e) => e.ip);
      for (const ip of protectedBlocks) expect(ips).not.toContain(ip.replace(/\/32$/, ''));
      expect(after.entries.find((e) => e.ip === control)).toMatchObject({ reason: 'manual' });
      expect(after.counts.skipped.allowlist).toBe(before.counts.skipped.allowlist + protectedBlocks.length);

      // The same through a real (dry-run) sync: the rendered rules never name them.
      const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
      const rules = readFileSync(join(dir, 'state', 'dry-run.ipset'), 'utf8');
      expect(rules).toContain(` ${control}`);
      for (const ip of protectedBlocks) expect(rules).not.toMatch(new RegExp(` ${ip.replace(/[./]/g, '\\$&')}(\\s|$)`, 'm'));
      const report = sim.reports.at(-1)!.body as { blacklist: string[] };
      for (const ip of protectedBlocks) expect(report.blacklist).not.toContain(ip);
      expect(report.blacklist).toContain(control);
    } finally {
      for (const ip of [...protectedBlocks, control]) sim.setDecision(ip, -1);
    }
  });
});

describe('plan never selects the protected set', () => {
  it('manual blocks of cloud metadata, broadcast, multicast, reserved, this machine’s default gateway and resolver are skipped', async () => {
    const { stdout } = await execa('ip', ['-j', '-4', 'route', 'show', 'default']);
    const gateways = (JSON.parse(stdout || '[]') as { gateway?: string }[]).flatMap((r) => (r.gateway ? [r.gateway] : []));
    const resolvers = readFileSync('/etc/resolv.conf', 'utf8')
      .split('\n')
      .flatMap((l) => /^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/.exec(l)?.slice(1) ?? []);
    // This machine has both (a test that cannot see them would prove nothing).
    expect(gateways.length).toBeGreaterThan(0);
    expect(resolvers.length).toBeGreaterThan(0);
    const protectedBlocks = ['169.254.169.254', '255.255.255.255', '224.0.0.1', '240.1.2.3', ...gateways, ...resolvers];
    const control = '198.51.100.78';
    const { path } = config();
    for (const ip of [...protectedBlocks, control]) sim.setDecision(ip, 1);
    try {
      const ips = (await plan(path)).entries.map((e) => e.ip);
      for (const ip of protectedBlocks) expect(ips).not.toContain(ip);
      expect(ips).toContain(control);
    } finally {
      for (const ip of [...protectedBlocks, control]) sim.setDecision(ip, -1);
    }
  });
});
