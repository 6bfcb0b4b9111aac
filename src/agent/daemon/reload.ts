import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { DaemonParts } from './parts.js';
import type { Writer } from './writer.js';

/**
 * A reload answered at once, whatever runs. The new configuration has been read, checked
 * and put in force for everything that starts from now on: "configuration reloaded" is
 * logged now (with `pending` when work is in flight). Work in flight (a cycle's apply at a
 * million entries takes seconds) finishes with the configuration it started with; what must
 * follow it (removing the old objects when the names or the backend changed, closing the
 * old API client) is queued behind it on the writer, before the next cycle, which runs with
 * the new configuration as soon as the one in flight has ended. `cycle done` names the
 * configuration generation it ran with.
 */
export function announceReload(writer: Writer, logger: Logger, configPath: string, generation: number, old: DaemonParts, namesChanged: boolean): void {
  const pending = writer.busy ? { pending: 'the work in flight finishes with the previous configuration' } : {};
  logger.info({ config: configPath, configGeneration: generation, ...pending }, 'configuration reloaded');
  void writer.run(async () => {
    if (namesChanged) {
      logger.warn('owned object names or plugin changed: removing the old objects');
      await old.plugin.flush().catch((err: unknown) => logger.error(`flush of the old objects failed: ${errorMessage(err)}`));
    }
    await old.api.client.close().catch(() => undefined);
  });
}
