import { Daemon } from '../../agent/daemon/daemon.js';
import { errorMessage } from '../../errors.js';
import type { AgentConfig } from '../../config/load.js';
import { createApi, loadContext, openPluginForSync, openState, type GlobalOptions } from '../context.js';
import { loadAgentConfig } from '../load-config.js';
import { claimDaemon } from '../../agent/state/daemon-presence.js';
import { requireKernelRights } from '../kernel-rights.js';

/**
 * The long-running daemon. systemd sends SIGTERM to stop (exit 0 within a few
 * seconds) and SIGHUP to reload config.json.
 */
export async function runCommand(opts: GlobalOptions & { dryRun?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  requireKernelRights(config, 'run', { dryRun: opts.dryRun, hint: '`run --dry-run` needs neither' });
  // Before anything else (metrics port, restore, control socket): a second daemon on this
  // state dir exits 4 here, naming the first, having touched nothing. Held until the end.
  const claim = await claimDaemon(config.state_dir);
  // Validates metrics_listen before anything starts (ConfigError, exit 2). prom-client and the
  // metrics modules load only when metrics_listen is set: about 10 MB resident otherwise wasted.
  const minuteText = process.env.WCF_AGENT_MINUTE_MS ? Number(process.env.WCF_AGENT_MINUTE_MS) : 60_000;
  const minuteMs = Number.isFinite(minuteText) && minuteText > 0 ? minuteText : 60_000;
  const metrics = config.metrics_listen ? (await import('../../metrics/index.js')).setupDaemonMetrics(config, logger, minuteMs) : undefined;
  const daemon = new Daemon({
    logger,
    initialConfig: config,
    minuteMs,
    reload: () => loadAgentConfig(config.configPath),
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
  let stopping = false;
  const onStop = (signal: string) => {
    // The listeners stay for the whole stop (not `once`): a second SIGTERM/SIGINT with no listener
    // would kill the daemon mid-apply, before on_stop (a process-runner library that re-raised them
    // once did exactly that; commands now run through src/exec/run.ts, which hooks no signal).
    // A repeated signal is ignored.
    if (stopping) {
      logger.info({ signal }, 'already stopping');
      return;
    }
    stopping = true;
    logger.info({ signal }, 'stopping');
    daemon.stop().then(() => metrics?.stop()).then(
      () => resolveDone(0),
      (err: unknown) => {
        logger.error(`stop failed: ${errorMessage(err)}`);
        resolveDone(1);
      },
    );
  };
  process.on('SIGTERM', () => onStop('SIGTERM'));
  process.on('SIGINT', () => onStop('SIGINT'));
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP' }, 'reloading config.json');
    void daemon.reload();
  });

  await metrics?.start(daemon.health);
  await daemon.start();
  logger.info({ plugin: config.plugin, agid: config.agid, pid: process.pid }, 'wcf-agent daemon started');
  const code = await done;
  claim.release();
  logger.info('stopped');
  logger.flush?.();
  return code;
}
