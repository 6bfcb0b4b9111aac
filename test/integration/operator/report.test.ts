import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
let path: string;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 200, seed: 9 });
  path = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token }).path;
});
afterAll(async () => {
  await sim?.close();
});

const ips = (filter: 0 | 2 | 3) => [...sim.indicators(filter)].map((i) => i.ip);

describe('report', () => {
  it('--decision block: the simulator lists it under filter=2 (manually blocked)', async () => {
    expect(ips(2)).not.toContain('203.0.113.77');
    const r = await runCli(['report', '203.0.113.77', '--confidence', '0.9', '--decision', 'block', '--source', 'honeypot', '--notes', 'ssh brute force', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^reported 203\.0\.113\.77: confidence 0\.9, decision block/);
    expect(ips(2)).toContain('203.0.113.77');
    expect(ips(0)).toContain('203.0.113.77');
  });

  it('a network with --decision allow and a ttl: whitelisted (filter=3) until then', async () => {
    const r = await runCli(['report', '198.51.100.0/24', '--confidence', '0.2', '--decision', '0', '--ttl', '2h', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/decision allow \(whitelist\) until \d{4}-/);
    expect(ips(3)).toContain('198.51.100.0/24');
  });

  it('no decision: a score-based report (decision -1 clears an earlier manual one)', async () => {
    const r = await runCli(['report', '203.0.113.77', '--confidence', '0.5', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(ips(2)).not.toContain('203.0.113.77');
    expect(ips(0)).toContain('203.0.113.77');
  });

  it.each([
    [['300.1.2.3', '--confidence', '0.5'], /IP: /],
    [['10.1.2.3/8', '--confidence', '0.5'], /IP: "10\.1\.2\.3\/8" has host bits set; the network is 10\.0\.0\.0\/8/],
    [['192.0.2.1', '--confidence', '1.5'], /--confidence: expected a number from 0 to 1/],
    [['192.0.2.1', '--confidence', 'high'], /--confidence: /],
    [['192.0.2.1'], /--confidence/],
    [['192.0.2.1', '--confidence', '0.5', '--decision', '2'], /--decision: expected block, allow or none/],
    [['192.0.2.1', '--confidence', '0.5', '--ttl', '1000000000'], /--ttl: must lie in the future/],
    [['192.0.2.1', '--confidence', '0.5', '--ttl', 'tomorrow'], /--ttl: /],
  ])('bad values exit 2 naming the flag, nothing sent: %j', async (args, message) => {
    const mark = sim.requests.length;
    const r = await runCli(['report', ...(args as string[]), '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(message as RegExp);
    expect(sim.requests.length).toBe(mark);
  });
});
