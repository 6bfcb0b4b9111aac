import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { fastFailConfig, runCli } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';

/**
 * Operators (or a script) running several `allow` / `block` at once: each waits briefly for
 * the other's lock instead of failing, every one exits 0, and no update is lost. With a
 * daemon (it applies) and without one (each applies under the agent lock). Dry-run rules.
 */

let sim: Simulator;
const dirs: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({ indicators: 100, seed: 59, agentConfig: { maximum_rules: '200', score_threshold: '3', sync_time: '5', running: 'true' } });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Six allows and six blocks of distinct addresses in 198.51.100.0/24, all started together. */
async function twelveAtOnce(path: string) {
  const jobs = Array.from({ length: 12 }, (_, i) => [i % 2 ? 'block' : 'allow', `198.51.100.${10 + i}`] as const);
  const results = await Promise.all(jobs.map(([verb, ip]) => runCli([verb, ip, '--config', path])));
  return { jobs, results };
}

const stored = (state: string) =>
  (JSON.parse(readFileSync(join(state, 'overrides.json'), 'utf8')) as { overrides: { cidr: string; action: string }[] }).overrides.map((o) => `${o.action} ${o.cidr}`).sort();
const rules = (file: string) => readFileSync(file, 'utf8');

describe('twelve allow / block commands at once', () => {
  it('with the daemon running: all exit 0, all stored, all applied', { timeout: 120_000 }, async () => {
    const cfg = fastFailConfig(sim);
    dirs.push(cfg.dir);
    const d = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: '60000' });
    try {
      await d.waitForLog(/^cycle done/);
      const { jobs, results } = await twelveAtOnce(cfg.path);
      for (const [i, r] of results.entries()) {
        expect(r.exitCode, `${jobs[i]!.join(' ')}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toContain('applied by the daemon');
      }
      expect(stored(cfg.state)).toEqual(jobs.map(([verb, ip]) => `${verb} ${ip}`).sort());
      const applied = rules(cfg.rules);
      for (const [verb, ip] of jobs) if (verb === 'block') expect(applied).toMatch(new RegExp(` ${ip.replace(/\./g, '\\.')}(\\s|$)`, 'm'));
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });

  it('without a daemon: all exit 0, each applying under the agent lock in turn; the last rules hold every block', { timeout: 120_000 }, async () => {
    const cfg = fastFailConfig(sim);
    dirs.push(cfg.dir);
    expect((await runCli(['sync', '--once', '--config', cfg.path])).exitCode).toBe(0);
    const { jobs, results } = await twelveAtOnce(cfg.path);
    for (const [i, r] of results.entries()) {
      expect(r.exitCode, `${jobs[i]!.join(' ')}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(/: applied \(no daemon running\): \d+ entries on dry-run$/);
    }
    expect(stored(cfg.state)).toEqual(jobs.map(([verb, ip]) => `${verb} ${ip}`).sort());
    const applied = rules(cfg.rules);
    for (const [verb, ip] of jobs) if (verb === 'block') expect(applied).toMatch(new RegExp(` ${ip.replace(/\./g, '\\.')}(\\s|$)`, 'm'));
  });
});
