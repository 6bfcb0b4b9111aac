import { WcfError, errorMessage, exitCodeOf, reportCodeOf } from '../../errors.js';
import { runBoundedCycle } from '../../agent/cycle/bounded-cycle.js';
import { withLock } from '../../agent/state/lock.js';
import { createApi, loadContext, openPluginForSync, openState, type GlobalOptions } from '../context.js';
import { printJson } from '../format.js';
import { createProgress } from '../progress.js';
import { requireKernelRights } from '../kernel-rights.js';
import { syncOutcomeToJson } from './sync-outcome.js';

export async function syncCommand(opts: GlobalOptions & { once?: boolean; dryRun?: boolean; json?: boolean; force?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  // Before the pull: a sync that could not apply would pull the whole feed for nothing.
  requireKernelRights(config, 'sync', { dryRun: opts.dryRun, hint: '`sync --dry-run` needs neither' });
  const state = openState(config, logger);
  const api = createApi(config, logger);
  try {
    return await withLock(config.state_dir, async () => {
      const plugin = await openPluginForSync(config, logger, state, Boolean(opts.dryRun));
      const progress = createProgress({ json: opts.json });
      progress.connecting(new URL(config.base_url).host, api.client);
      const outcome = await runBoundedCycle({ config, api, state, logger, force: Boolean(opts.force), onProgress: progress.onProgress }, plugin).finally(() =>
        progress.done(),
      );
      const r = outcome.record;
      if (opts.json) {
        await printJson(syncOutcomeToJson(outcome));
      } else if (r.ok) {
        const a = outcome.apply;
        process.stderr.write(
          `sync ok: ${r.applied} entries on ${r.plugin} (${r.byReason.manual} manual, ${r.byReason.url ? `${r.byReason.url} url, ` : ''}${r.byReason.score} score)` +
            (a ? `, +${a.added} -${a.removed} ~${a.updated} (${a.mode})` : '') +
            (outcome.dns ? `; ${outcome.dns.applied} names on ${outcome.dns.plugin} (${outcome.dns.byReason.manual} manual, ${outcome.dns.byReason.score} score)` : '') +
            `${r.running ? '' : ', running disabled: rules removed'}, ${r.durationMs} ms\n`,
        );
      }
      return outcome.error && !r.ok ? exitCodeOf(outcome.error) : 0;
    });
  } catch (err) {
    // Failures before the cycle runs (the lock is held, the plugin cannot open): with --json
    // the caller still gets one JSON object on stdout; the error is on stderr as well.
    if (!opts.json || !(err instanceof WcfError)) throw err;
    process.stderr.write(`wcf-agent: ${err.code}: ${errorMessage(err)}\n`);
    await printJson({ ok: false, code: reportCodeOf(err), error: err.code, message: errorMessage(err), applied: null, reported: false, plan: null });
    return exitCodeOf(err);
  } finally {
    await api.client.close();
  }
}
