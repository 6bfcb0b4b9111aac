/**
 * Incremental cycles as the daemon runs them: `runCycle` called again and
 * again in one long-lived process (the agent's modules from src/, loaded by tsx
 * as the bench itself is), with its code compiled by the JIT and its keep-alive
 * connection to the API open, exactly as `wcf-agent run` calls it every sync_time. The CLI figure
 * (`sync --once` in a new process each time) adds Node start-up, module
 * loading and a cold JIT, which a daemon pays once, at start.
 *
 * The first cycle is a full pull (not measured), the next one an incremental
 * warm-up (not measured), then `runs` measured cycles, each after `changes()`
 * has changed 1% of the indicators on the simulator.
 */
import { log } from './stats.js';

export interface WarmRun {
  cycleMs: number;
  timings: Record<string, number>;
  changes: { added: number; removed: number; updated: number; mode: string } | null;
}

export async function warmIncrementalCycles(configPath: string, runs: number, changes: (i: number) => Promise<void>): Promise<WarmRun[]> {
  const { loadConfig } = await import('../../src/config/load.js');
  const ctx = await import('../../src/cli/context.js');
  const { runCycle } = await import('../../src/agent/cycle/cycle.js');
  const { createLogger } = await import('../../src/log.js');

  const config = loadConfig(configPath);
  const logger = createLogger({ level: 'warn', pretty: false });
  const api = ctx.createApi(config, logger);
  const state = ctx.openState(config, logger);
  const plugin = await ctx.openPluginForSync(config, logger, state, false);
  const cycle = async () => {
    const o = await runCycle({ config, api, state, logger }, plugin);
    if (!o.record.ok) throw new Error(`warm cycle failed: ${o.record.message}`);
    return o;
  };
  try {
    await cycle(); // full pull into the state the CLI runs left (or from scratch)
    await changes(-1);
    await cycle(); // warm-up
    const out: WarmRun[] = [];
    for (let i = 0; i < runs; i++) {
      await changes(i);
      const o = await cycle();
      if (o.record.fullPull) throw new Error('expected an incremental pull');
      out.push({ cycleMs: o.record.durationMs, timings: o.timings ?? {}, changes: o.apply ? { added: o.apply.added, removed: o.apply.removed, updated: o.apply.updated, mode: o.apply.mode } : null });
      log(`daemon cycle incremental: ${o.record.durationMs} ms, ${JSON.stringify(out.at(-1)!.changes)}, ${JSON.stringify(o.timings)}`);
    }
    return out;
  } finally {
    await api.client.close();
  }
}
