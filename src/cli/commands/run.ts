import { Daemon } from '../../agent/daemon.js';
import { errorMessage } from '../../errors.js';
import { loadConfig } from '../../config/load.js';
import type { AgentConfig } from '../../config/load.js';
import { createApi, loadContext, openPluginForSync, openState, type GlobalOptions } from '../context.js';
import { setupDaemonMetrics } from '../../metrics/index.js';

/**
 * The long-running daemon. systemd sends SIGTERM to stop (exit 0 within a few
 * seconds) and SIGHUP to reload config.json.
 */
export async function runCommand(opts: GlobalOptions & { dryRun?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  // Validates metrics_listen before anything starts (ConfigError, exit 2).
  const metrics = setupDaemonMetrics(config, logger);
  const minuteMs = process.env.WCF_AGENT_MINUTE_MS ? Number(process.env.WCF_AGENT_MINUTE_MS) : 60_000;
  const daemon = new Daemon({
    logger,
    initialConfig: config,
    minuteMs: Number.isFinite(minuteMs) && minuteMs > 0 ? minuteMs : 60_000,
    reload: () => loadConfig(config.configPath),
    open: async (c: AgentConfig) => {
      const state = openState(c, logger);
      const parts = { config: c, state, api: createApi(c, logger), plugin: await openPluginForSync(c, logger, state, Boolean(opts.dryRun)) };
      return metrics ? metrics.instrument(parts) : parts;
    },
    onCycle: metrics?.onCycle,
    onRepair: metrics?.onRepair,
  });

  let resolveDone!: (code: number) => void;
  const done = new Promise<number>((r) => (resolveDone = r));
  const onStop = (signal: string) => {
    logger.info({ signal }, 'stopping');
    daemon.stop().then(() => metrics?.stop()).then(
      () => resolveDone(0),
      (err: unknown) => {
        logger.error(`stop failed: ${errorMessage(err)}`);
        resolveDone(1);
      },
    );
  };
  // `on`, not `once`: execa's exit hook (signal-exit, present while a child runs, such as the
  // watcher's `nft monitor`) re-raises a signal it finds no other listener for, which would kill
  // the daemon mid-stop. A second signal is ignored: the stop in progress finishes.
  let stopping = false;
  const stopOnce = (signal: string) => {
    if (stopping) return;
    stopping = true;
    onStop(signal);
  };
  process.on('SIGTERM', () => stopOnce('SIGTERM'));
  process.on('SIGINT', () => stopOnce('SIGINT'));
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP' }, 'reloading config.json');
    void daemon.reload();
  });

  await metrics?.start();
  await daemon.start();
  logger.info({ plugin: config.plugin, agid: config.agid, pid: process.pid }, 'wcf-agent daemon started');
  const code = await done;
  logger.info('stopped');
  logger.flush?.();
  return code;
}
