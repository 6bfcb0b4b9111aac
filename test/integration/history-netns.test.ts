import { rmSync } from 'node:fs';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../helpers/cli.js';
import { DaemonProcess } from '../helpers/daemon.js';
import { createLab, isRoot, type Lab } from '../netns/netns.js';
import { kernelSet } from '../netns/relay.js';

/**
 * The change history against real nftables: the agent (built CLI, each command its own
 * process) applies its rules inside a test namespace (config `netns`); `history` and
 * `explain --at` read back what each process recorded. Root is required: without it these
 * fail loudly rather than being skipped.
 */

const TARGET = '203.0.113.9';
const MANUAL = '203.0.113.77';
const AGENT_CONFIG = { maximum_rules: '500', score_threshold: '4', sync_time: '600', running: 'true' } as const;

interface HistoryJson {
  target: string;
  events: { ts: number; entry: string; change: string; reason: string; score: number | null; rank: number | null; cause: string }[];
  notes: { ts: number; reason: string; cause: string; text: string }[];
  history: { from: number | null };
}
interface AtJson {
  blocked: boolean | null;
  verdict: string;
  by: { entry: string; reason: string; since: number | null } | null;
  history: { from: number | null };
}

describe('the change history with the nftables backend', () => {
  let sim: Simulator;
  let lab: Lab;
  const dirs: string[] = [];
  const running: DaemonProcess[] = [];

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 200, seed: 40, agentConfig: { ...AGENT_CONFIG } });
    lab = await createLab();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((d) => d.stop()));
    await execa('ip', ['netns', 'exec', lab.host.name, 'nft', 'flush', 'ruleset'], { reject: false });
  });
  afterAll(async () => {
    await Promise.all(running.splice(0).map((d) => d.stop()));
    await lab?.destroy();
    await sim?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const config = (extra: Record<string, unknown> = {}) => {
    const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.host.name, retries: 0, jitter_seconds: 0, ...extra });
    dirs.push(cfg.dir);
    return cfg;
  };
  const cli = async (args: string[], path: string) => {
    const r = await runCli([...args, '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    return r;
  };
  const history = async (target: string, path: string) => JSON.parse((await cli(['history', target, '--json'], path)).stdout) as HistoryJson;
  const at = async (target: string, ts: number, path: string) => JSON.parse((await cli(['explain', target, '--at', String(ts), '--json'], path)).stdout) as AtJson;
  /** The clock past `ts`, so the next change is stamped a second later. */
  const after = (ts: number) => waitFor(() => Math.floor(Date.now() / 1000) > ts, `the clock past ${ts}`);

  it('blocked by score, whitelisted on the server, unblocked by the next sync: added (score) then removed (whitelisted); explain --at between says blocked', async () => {
    const { path } = config();
    sim.upsertIndicator({ ip: TARGET, score: 9.9 });
    const sync = await cli(['sync', '--once'], path);
    // The batch's log line, with its counts by reason as fields.
    expect(sync.stderr).toMatch(/"history":"addresses","cause":"cycle","added":\d+.*"added_score":\d+/);
    expect(await kernelSet(lab.host, 'nftables')).toContain(TARGET);
    const added = (await history(TARGET, path)).events;
    expect(added.map((e) => [e.change, e.reason, e.cause])).toEqual([['added', 'score', 'cycle']]);
    expect(added[0]!.score).toBeGreaterThan(4);
    expect(added[0]!.rank).toBeGreaterThanOrEqual(1);
    const addedAt = added[0]!.ts;

    await after(addedAt);
    sim.setDecision(TARGET, 0); // whitelisted on the server
    await cli(['sync', '--once'], path);
    expect(await kernelSet(lab.host, 'nftables')).not.toContain(TARGET);

    const h = await history(TARGET, path);
    expect(h.target).toBe(TARGET);
    expect(h.events.map((e) => `${e.change} (${e.reason}) ${e.cause}`)).toEqual(['added (score) cycle', 'removed (whitelisted) cycle']);
    const removedAt = h.events[1]!.ts;
    expect(removedAt).toBeGreaterThan(addedAt);
    // The table as people read it.
    const text = (await cli(['history', TARGET], path)).stdout;
    expect(text.indexOf('added (score)')).toBeGreaterThan(-1);
    expect(text.indexOf('removed (whitelisted)')).toBeGreaterThan(text.indexOf('added (score)'));

    expect(await at(TARGET, addedAt, path)).toMatchObject({ blocked: true, verdict: 'score', by: { entry: TARGET, since: addedAt } });
    expect(await at(TARGET, removedAt - 1, path)).toMatchObject({ blocked: true, verdict: 'score' });
    expect(await at(TARGET, removedAt, path)).toMatchObject({ blocked: false, verdict: 'not_blocked' });
    // ISO 8601 works as well as epoch seconds.
    const iso = new Date(addedAt * 1000).toISOString();
    expect((await cli(['explain', TARGET, '--at', iso], path)).stdout).toMatch(new RegExp(`^${TARGET.replace(/\./g, '\\.')} at .*: BLOCKED \\(score\\)`));
    // Before the history began: said, not guessed.
    expect(await at(TARGET, addedAt - 3600, path)).toMatchObject({ blocked: null, verdict: 'unknown', history: { from: expect.any(Number) } });
    expect((await cli(['explain', TARGET, '--at', String(addedAt - 3600)], path)).stdout).toMatch(/does not reach back that far/);
    sim.setDecision(TARGET, -1);
    sim.removeIndicator(TARGET);
  });

  it('the daemon: a decision poll, a repair, the on_stop flush and the restore of the next start, each with its cause', async () => {
    const { path } = config({ decision_poll_seconds: 1, on_stop: 'flush' });
    const d = new DaemonProcess(path);
    running.push(d);
    await d.waitForLog(/^cycle done/);
    sim.setDecision(MANUAL, 1); // a manual block, picked up by the poll between cycles
    await d.waitForLog(/^manual decisions changed: applied without a full cycle/);
    expect(await kernelSet(lab.host, 'nftables')).toContain(MANUAL);
    // Another tool empties the ruleset: the watcher puts the set back, and the history notes it.
    await lab.host.exec('nft', ['flush', 'ruleset']);
    await d.waitForLog(/put back with the last applied set/);
    expect(await kernelSet(lab.host, 'nftables')).toContain(MANUAL);
    expect(await d.stop()).toBe(0);
    expect(await kernelSet(lab.host, 'nftables').catch(() => [])).not.toContain(MANUAL);

    const d2 = new DaemonProcess(path);
    running.push(d2);
    await d2.waitForLog(/^restored the last known good set/);
    expect(await kernelSet(lab.host, 'nftables')).toContain(MANUAL);
    const h = await history(MANUAL, path);
    expect(h.events.map((e) => `${e.change} (${e.reason}) ${e.cause}`)).toEqual(['added (manual) poll', 'removed (flushed) flush', 'added (manual) restore']);
    // The notes of the repair and of the restore (what it put back into the emptied kernel).
    expect(h.notes.map((n) => [n.reason, n.cause])).toEqual([
      ['repaired', 'repair'],
      ['restored', 'restore'],
    ]);
    expect(h.notes[1]!.text).toMatch(/^the last applied set \(\d+ entries\) applied at start-up; \d+ were not in the kernel/);
    await d2.stop();
    sim.setDecision(MANUAL, -1);
  });
});
