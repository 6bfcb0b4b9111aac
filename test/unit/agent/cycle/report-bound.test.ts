// The state report is bounded: at 100,000 applied entries (1.6 MB as a full list) it stays within
// report_max_kb (256 KiB) and a server behind a 1 MiB body limit stores it; a server with a
// smaller limit answers 413 and gets one shorter report, never a loop and never a failed cycle.
// Whole cycles against the simulator, bytes counted at the simulator.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { runCycle } from '../../../../src/agent/cycle/cycle.js';
import { StateStore } from '../../../../src/agent/state/store.js';
import { parseConfig } from '../../../../src/config/load.js';
import { createApi } from '../../../../src/cli/context.js';
import { startSimulator, type Simulator } from '../../../simulator/index.js';
import { RecordingPlugin } from '../../../helpers/recording-plugin.js';

const dirs: string[] = [];
const sims: Simulator[] = [];
afterAll(async () => {
  await Promise.all(sims.map((s) => s.close()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Line {
  level: number;
  msg: string;
  [k: string]: unknown;
}

async function simulator(o: Parameters<typeof startSimulator>[0]): Promise<Simulator> {
  const sim = await startSimulator(o);
  sims.push(sim);
  return sim;
}

/** An agent against `sim` with its own state dir; `cycle()` runs one whole sync. */
function agent(sim: Simulator, extra: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-report-'));
  dirs.push(dir);
  const lines: Line[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  const config = parseConfig(JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: 'state', retries: 0, ...extra }), join(dir, 'config.json'));
  const state = new StateStore(config.state_dir, logger);
  return {
    state,
    lines,
    async cycle() {
      const api = createApi(config, logger);
      try {
        return await runCycle({ config, api, state, logger }, new RecordingPlugin());
      } finally {
        await api.client.close();
      }
    },
  };
}

const reportCalls = (sim: Simulator) => sim.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/feedback'));

describe('the state report is bounded', () => {
  it('at 100,000 applied entries it is at most 256 KiB, a 1 MiB body limit takes it, manual entries first; status and the log say it was shortened', async () => {
    const sim = await simulator({ indicators: 700_000, seed: 5, agentConfig: { maximum_rules: '100000', score_threshold: '1', sync_time: '5', running: 'true' } });
    const manual = Array.from({ length: 50 }, (_, i) => `198.51.100.${i}`);
    for (const ip of manual) sim.setDecision(ip, 1);
    const a = agent(sim);
    const out = await a.cycle();
    expect(out.record.ok).toBe(true);
    expect(out.record.applied).toBe(100_000);
    expect(out.reported).toBe(true);

    const [call] = reportCalls(sim);
    expect(call!.status).toBe(200);
    expect(call!.bytesIn).toBeLessThanOrEqual(256 * 1024 + 1024); // the body within 256 KiB, plus the request's headers
    const body = sim.reports.at(-1)!.body as { blacklist: string[] };
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThanOrEqual(256 * 1024);
    expect(body.blacklist.length).toBeGreaterThan(10_000);
    expect(body.blacklist.length).toBeLessThan(100_000);
    // Every manual block is listed, ahead of the score entries.
    const manualApplied = a.state.loadApplied('dry-run')!.entries.filter((e: { reason: string }) => e.reason === 'manual').map((e: { cidr: string }) => e.cidr);
    expect(manualApplied).toEqual(expect.arrayContaining(manual));
    expect(body.blacklist.slice(0, manualApplied.length).sort()).toEqual([...manualApplied].sort());

    expect(a.state.small.report).toMatchObject({ entries: body.blacklist.length, total: 100_000, shortened: true, ok: true });
    expect(out.stateReport?.shortened).toBe(true);
    const said = a.lines.filter((l) => /^the state report lists \d+ of 100000 applied entries/.test(l.msg));
    expect(said).toHaveLength(1);
    // The next cycle sends a report of the same kind: nothing new to say.
    await a.cycle();
    expect(a.lines.filter((l) => /^the state report lists/.test(l.msg))).toHaveLength(1);
  }, 300_000);

  it('a 413 is answered by one much shorter report in the same cycle, which does not fail; every cycle, never more than two tries', async () => {
    const sim = await simulator({ indicators: 40_000, seed: 9, maxBodyBytes: 32 * 1024, agentConfig: { maximum_rules: '10000', score_threshold: '1', sync_time: '5', running: 'true' } });
    const a = agent(sim);
    const out = await a.cycle();
    expect(out.record.ok).toBe(true);
    expect(out.record.code).toBe(0);
    expect(out.reported).toBe(true);
    const [refused, shorter, ...more] = reportCalls(sim);
    expect(more).toHaveLength(0);
    expect(refused!.status).toBe(413);
    expect(shorter!.status).toBe(200);
    expect(shorter!.bytesIn * 4).toBeLessThan(refused!.bytesIn);
    const listed = (sim.reports.at(-1)!.body as { blacklist: string[] }).blacklist.length;
    expect(listed).toBeLessThan(out.record.applied / 4);
    expect(a.state.small.report).toMatchObject({ entries: listed, total: out.record.applied, shortened: true, ok: true });
    expect(a.state.small.report!.refused).toBeGreaterThan(32 * 1024);
    const warned = a.lines.filter((l) => /^the server refused the state report as too large \(413/.test(l.msg));
    expect(warned).toHaveLength(1);

    sim.clearRequests();
    expect((await a.cycle()).record.ok).toBe(true);
    expect(reportCalls(sim).map((c) => c.status)).toEqual([413, 200]);
    expect(a.lines.filter((l) => /^the server refused the state report/.test(l.msg))).toHaveLength(1);
  }, 60_000);
});
