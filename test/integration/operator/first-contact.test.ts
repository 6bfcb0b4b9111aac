// A mistyped agid against a record deleted on the server: the first is a configuration error
// the operator sees at once, the second keeps enforcing with the last known configuration.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
const dirs: string[] = [];
const STORED = { maximum_rules: '300', score_threshold: '3', sync_time: '5', running: 'true' };

beforeAll(async () => {
  sim = await startSimulator({ indicators: 600, seed: 5, agentConfig: STORED });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function config(agid: string) {
  const c = writeConfig({ agid, base_url: sim.url, token: sim.token, retries: 0 });
  dirs.push(c.dir);
  return c;
}

describe('first contact with the agent record', () => {
  it('a mistyped agid: exit 3, code 24 with a hint to check agid; nothing applied, nothing reported', async () => {
    const { path, dir } = config(`${sim.agid}-typo`);
    const reports = sim.reports.length;
    const r = await runCli(['sync', '--dry-run', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(3);
    const out = JSON.parse(r.stdout) as { ok: boolean; code: number; error: string; message: string; applied: number };
    expect(out).toMatchObject({ ok: false, code: 24, error: 'WCF_ERR_AGENT_UNKNOWN', applied: 0 });
    expect(out.message).toBe(
      `the API has no agent record for agid "${sim.agid}-typo": check agid in config.json (wcf-agent agents list shows the records)`,
    );
    expect(r.stderr).not.toMatch(/deleted/);
    expect(sim.reports.length).toBe(reports);
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);

    const plan = await runCli(['plan', '--config', path]);
    expect(plan.exitCode).toBe(3);
    expect(plan.stderr).toContain(`wcf-agent: WCF_ERR_AGENT_UNKNOWN: the API has no agent record for agid "${sim.agid}-typo": check agid`);
  });

  it('a record seen before, then deleted: exit 0, the last configuration kept, no report', async () => {
    const { path, dir } = config(sim.agid);
    expect((await runCli(['sync', '--dry-run', '--config', path])).exitCode).toBe(0);
    sim.deleteAgent(sim.agid);
    try {
      const reports = sim.reports.length;
      const r = await runCli(['sync', '--dry-run', '--json', '--config', path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, code: 0, reported: false });
      expect(r.stderr).toMatch(/agent record not found on the server \(deleted\?\); keeping the last known configuration/);
      expect(sim.reports.length).toBe(reports);
      expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(true);
    } finally {
      sim.setAgentConfig(sim.agid, STORED);
    }
  });
});
