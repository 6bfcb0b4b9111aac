import type { CycleOutcome } from '../agent/cycle/types.js';
import type { DaemonParts } from '../agent/daemon/parts.js';
import type { AgentConfig } from '../config/load.js';
import { errorMessage } from '../errors.js';
import type { FirewallPlugin } from '../firewall/index.js';
import type { Logger } from '../log.js';
import { parseListen } from './listen.js';
import { AgentMetrics } from './registry.js';
import { startMetricsServer, type HealthProbes, type MetricsServer } from './server.js';
import { loadOverrides } from '../agent/state/overrides-store.js';
import { countOverrides } from '../policy/overrides.js';
import { previousSettings } from '../agent/cycle/cycle.js';
import { registerHistoryGauges } from './history-gauges.js';
import { historyStats } from '../agent/state/history/files.js';

export { AgentMetrics } from './registry.js';
import type { CounterRead, SideCounters } from './registry.js';
export { parseListen, isLoopbackHost, type ListenAddress } from './listen.js';


/** The firewall plugin with each apply timed into `metrics`. Everything else passes through. */
export function instrumentPlugin(plugin: FirewallPlugin, metrics: AgentMetrics): FirewallPlugin {
  return {
    name: plugin.name,
    async apply(entries, options) {
      const started = performance.now();
      try {
        return await plugin.apply(entries, options);
      } finally {
        metrics.observeApply((performance.now() - started) / 1000);
      }
    },
    ...(plugin.prefetch ? { prefetch: () => plugin.prefetch!() } : {}),
    ...(plugin.check ? { check: () => plugin.check!() } : {}),
    ...(plugin.verify ? { verify: (entries) => plugin.verify!(entries) } : {}),
    ...(plugin.distrust ? { distrust: (why: string) => plugin.distrust!(why) } : {}),
    ...(plugin.listTimeouts ? { listTimeouts: () => plugin.listTimeouts!() } : {}),
    list: () => plugin.list(),
    flush: () => plugin.flush(),
    readCounters: () => plugin.readCounters(),
    readHits: () => plugin.readHits(),
    objects: () => plugin.objects(),
  };
}

/** The rules' total, with the per-direction split summed from the per-address hit counters (small reads: only addresses hit). */
async function readCounterSides(plugin: FirewallPlugin): Promise<CounterRead> {
  const [total, hits] = await Promise.all([plugin.readCounters(), plugin.readHits()]);
  const sides: Record<'in' | 'out', SideCounters> = { in: { packets: 0, bytes: 0, indicators: 0 }, out: { packets: 0, bytes: 0, indicators: 0 } };
  for (const h of hits) {
    const s = sides[h.side];
    s.packets += h.packets;
    s.bytes += h.bytes;
    s.indicators++;
  }
  return { ...total, sides };
}

export interface DaemonMetrics {
  readonly metrics: AgentMetrics;
  /** Wrap the daemon's parts (called from `open`, at start and on each reload). */
  instrument(parts: DaemonParts): DaemonParts;
  onCycle(outcome: CycleOutcome): void;
  onRepair(objects: readonly string[]): void;
  /** Start listening (with the daemon's /healthz and /readyz); a bind failure is logged, never fatal (enforcement matters more than metrics). */
  start(health?: HealthProbes): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The `run` command's Prometheus endpoint, or undefined when `metrics_listen`
 * is not set. A malformed `metrics_listen` throws ConfigError (exit 2) before
 * anything starts; a non-loopback host the operator chose is allowed with a warning.
 */
export function setupDaemonMetrics(config: AgentConfig, logger: Logger, minuteMs = 60_000): DaemonMetrics | undefined {
  if (!config.metrics_listen) return undefined;
  const listen = parseListen(config.metrics_listen);
  const metrics = new AgentMetrics();
  let server: MetricsServer | undefined;
  let firstOpen = true;
  let lastReadError: string | undefined;
  let stateDir = config.state_dir; // the configuration in force (a reload may move it)
  registerHistoryGauges(metrics.registry, () => historyStats(stateDir));

  return {
    metrics,
    instrument(parts) {
      parts.api.client.onRequest = metrics.observeRequest;
      if (firstOpen) {
        // What the state file says until the first cycle: a restarted daemon is not a new one.
        metrics.setLastSuccess(parts.state.small.lastSuccessAt);
        metrics.setLastCycleCode(parts.state.small.lastCycle?.code);
        metrics.observeSettings(previousSettings(parts).settings, minuteMs);
      }
      firstOpen = false;
      stateDir = parts.config.state_dir;
      const plugin = instrumentPlugin(parts.plugin, metrics);
      metrics.setOverridesReader(() => countOverrides(loadOverrides(parts.config.state_dir), Math.floor(Date.now() / 1000)));
      metrics.setCounterReader(
        () => readCounterSides(plugin),
        (err) => {
          // Once per distinct problem: a scrape every 15 s must not flood the journal.
          const msg = errorMessage(err);
          if (msg !== lastReadError) logger.warn(`cannot read the firewall drop counters (metrics keep the last values): ${msg}`);
          lastReadError = msg;
        },
      );
      return { ...parts, plugin };
    },
    onCycle: (outcome) => metrics.observeCycle(outcome),
    onRepair: (objects) => metrics.observeRepair(objects),
    async start(health) {
      if (health) metrics.setReadiness(async () => (await health.ready()).ok);
      if (health?.truth) metrics.setTruth(() => health.truth!());
      if (!listen.loopback) {
        logger.warn({ host: listen.host }, `metrics_listen ${config.metrics_listen} is not a loopback address: the endpoint is reachable from the network`);
      }
      try {
        server = await startMetricsServer(listen, metrics.registry, logger, health);
        logger.info({ url: server.url }, `metrics listening on ${server.url}`);
      } catch (err) {
        logger.error(`metrics endpoint not started (${config.metrics_listen}): ${errorMessage(err)}; the agent keeps running without it`);
      }
    },
    async stop() {
      await server?.close();
      server = undefined;
    },
  };
}
