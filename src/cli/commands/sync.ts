import { exitCodeOf } from '../../errors.js';
import { runCycle } from '../../agent/cycle.js';
import { withLock } from '../../agent/lock.js';
import { createApi, loadContext, openPluginForSync, openState, type GlobalOptions } from '../context.js';
import { printJson } from '../format.js';
import { createProgress } from '../progress.js';
import { planToJson } from './plan.js';

export async function syncCommand(opts: GlobalOptions & { once?: boolean; dryRun?: boolean; json?: boolean; force?: boolean }): Promise<number> {
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const api = createApi(config, logger);
  try {
    return await withLock(config.state_dir, async () => {
      const plugin = await openPluginForSync(config, logger, state, Boolean(opts.dryRun));
      const progress = createProgress({ json: opts.json });
      const outcome = await runCycle({ config, api, state, logger, force: Boolean(opts.force), onProgress: progress.onProgress }, plugin).finally(() =>
        progress.done(),
      );
      const r = outcome.record;
      if (opts.json) {
        await printJson({
          ok: r.ok,
          code: r.code,
          error: r.errorCode ?? null,
          message: r.message ?? null,
          plugin: r.plugin,
          applied: r.applied,
          by_reason: r.byReason,
          skipped: r.skipped,
          full_pull: r.fullPull,
          running: r.running,
          reported: outcome.reported,
          duration_ms: r.durationMs,
          timings_ms: outcome.timings ?? null,
          changes: outcome.apply ?? null,
          dns: outcome.dns ?? null,
          plan: outcome.plan ? planToJson(config.agid, outcome.plan) : null,
        });
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
  } finally {
    await api.client.close();
  }
}
