import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { expect } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, waitFor, writeConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { kernelEntries } from '../../helpers/kernel.js';
import { ADDR, type Lab } from '../../netns/netns.js';

export type Backend = 'nftables' | 'ipset';

/** How long after another firewall manager's command the agent must enforce again. */
export const ENFORCE_DEADLINE_MS = 10_000;
/** The daemon's minute in these tests: its cycle (sync_time 1) every 1.5 s, so "several cycles" take seconds. */
const MINUTE_MS = 1500;
/** Cycles watched after each command for writes the agent should not make. */
export const CYCLES_WATCHED = 3;

/**
 * What the agent wrote to the kernel, by its own log: its objects made anew ("created"), a
 * refill or delta of its set (the backends' "entries updated"), a repair by the watcher
 * between cycles ("put back"), by a cycle before its pull ("re-asserted") or by its apply
 * ("re-created"). A cycle that
 * finds its objects as it left them writes nothing and logs none of these.
 */
const WRITES = /^created |entries updated|put back with the last applied set|re-asserted the last applied set|have been re-created/;
/** Those of the writes that repair what another tool removed. */
export const REPAIR = /put back with the last applied set|re-asserted the last applied set|have been re-created/;

/**
 * The agent's daemon in the lab's host namespace (config `netns`), with the simulator
 * listing ADDR.blocked (high score) and ADDR.allowed (below the threshold).
 */
export class AgentUnderTest {
  private constructor(
    readonly backend: Backend,
    readonly sim: Simulator,
    readonly config: string,
    readonly daemon: DaemonProcess,
    private readonly lab: Lab,
  ) {}

  static async start(lab: Lab, backend: Backend): Promise<AgentUnderTest> {
    const sim = await startSimulator({ indicators: 50, seed: 38, agentConfig: { maximum_rules: '100', score_threshold: '4', sync_time: '1', running: 'true' } });
    sim.upsertIndicator({ ip: ADDR.blocked, score: 9.9 });
    sim.upsertIndicator({ ip: ADDR.allowed, score: 1 });
    const cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: backend, netns: lab.host.name, retries: 0, jitter_seconds: 0 });
    const daemon = new DaemonProcess(cfg.path, { WCF_AGENT_MINUTE_MS: String(MINUTE_MS) });
    const agent = new AgentUnderTest(backend, sim, cfg.path, daemon, lab);
    await daemon.waitForLog(/watching the agent’s firewall objects/, 1, 30_000);
    await agent.enforcing();
    return agent;
  }

  /** `status --probe`: 0 while the daemon runs and the kernel holds every object of its last applied set. */
  async probe(): Promise<{ exitCode: number; line: string }> {
    const r = await runCli(['status', '--probe', '--config', this.config]);
    return { exitCode: r.exitCode, line: r.stdout.trim() || r.stderr.trim() };
  }

  /** Waits (ENFORCE_DEADLINE_MS at most) until the probe says enforcing and the blocked address cannot connect while the allowed one can. */
  async enforcing(deadlineMs = ENFORCE_DEADLINE_MS): Promise<void> {
    let last = '';
    await waitFor(
      async () => {
        const p = await this.probe();
        last = p.line;
        return p.exitCode === 0 && (await this.lab.connect(ADDR.blocked, 500)) === 'timeout';
      },
      `the agent to enforce again (status --probe: ${last})`,
      deadlineMs,
      100,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last probe: ${last}; daemon log:\n${this.daemon.raw.slice(-15).join('\n')}`);
    });
    expect(await this.lab.connect(ADDR.allowed)).toBe('connected');
  }

  /** Log lines of kernel writes so far. */
  writes(): number {
    return this.daemon.count(WRITES);
  }

  /** The kernel writes made while `action` runs and over the CYCLES_WATCHED cycles after the agent enforces again. */
  async around(action: () => Promise<unknown>): Promise<{ writes: string[]; cycles: number }> {
    const writesBefore = this.writes();
    await action();
    await this.enforcing();
    const cyclesAt = this.daemon.count(/^cycle done$/);
    await this.daemon.waitForLog(/^cycle done$/, cyclesAt + CYCLES_WATCHED, 30_000);
    const writes = this.daemon.logs.filter((l) => WRITES.test(l.msg)).slice(writesBefore).map((l) => l.msg);
    return { writes, cycles: this.daemon.count(/^cycle done$/) - cyclesAt };
  }

  /** The agent's entries in the kernel. */
  entries(): Promise<string[]> {
    return kernelEntries(this.lab.host, this.backend);
  }

  private stopped = false;

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.daemon.stop();
    await this.sim.close();
  }

  /** The config and state dir. */
  remove(): void {
    rmSync(dirname(this.config), { recursive: true, force: true });
  }
}
