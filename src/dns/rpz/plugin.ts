import type { Logger } from '../../log.js';
import { DnsError, errorMessage } from '../../errors.js';
import { readOwned, writeOwned } from '../owned-file.js';
import { nextSerial, parseRpzNames, parseRpzSerial, renderRpzZone } from '../render.js';
import type { DnsAnswer, DnsApplyResult, DnsPlugin } from '../types.js';
import type { CommandRunner } from '../../exec/runner.js';
import { runTool } from '../exec.js';

export interface RpzOptions {
  zoneFile: string;
  /** Run after each write, e.g. ['rndc', 'reload', 'rpz.wcf']; none: the resolver reloads on its own. */
  reload: readonly string[] | undefined;
  answer: DnsAnswer;
  runner: CommandRunner;
  logger: Logger;
  now: () => number;
}

/**
 * RPZ: the whole zone file is the agent's (written atomically with a larger SOA serial
 * each time), then `rpz_reload`. When the reload fails, the previous file is put back and
 * reloaded: a resolver that refused the new zone may have dropped what it served (unbound
 * empties the zone before reading the file), so only loading the previous file again puts
 * the previous blocks back in force.
 */
export function createRpzPlugin(o: RpzOptions): DnsPlugin {
  async function write(names: readonly string[]): Promise<{ before: string[] }> {
    const previous = readOwned(o.zoneFile);
    const text = renderRpzZone(names, o.answer, nextSerial(parseRpzSerial(previous), o.now()));
    writeOwned(o.zoneFile, text);
    if (o.reload) {
      try {
        await runTool(o.runner, o.reload);
      } catch (err) {
        await restore(previous, err);
        throw err instanceof DnsError ? err : new DnsError(String(err), { cause: err });
      }
    }
    return { before: parseRpzNames(previous) };
  }

  /** The previous zone back in the file and in the resolver (an empty zone if there was none). */
  async function restore(previous: string, failure: unknown): Promise<void> {
    try {
      writeOwned(o.zoneFile, previous || renderRpzZone([], o.answer, nextSerial(undefined, o.now())));
    } catch (err) {
      o.logger.error({ failure: errorMessage(failure) }, `the resolver refused the new zone, and the previous one could not be put back: ${errorMessage(err)}`);
      return;
    }
    try {
      await runTool(o.runner, o.reload!);
      o.logger.warn(`the resolver refused the new zone; the previous ${o.zoneFile} is back in force`);
    } catch (again) {
      o.logger.error({ failure: errorMessage(failure) }, `the previous ${o.zoneFile} is back, but reloading it failed too: ${errorMessage(again)}`);
    }
  }

  return {
    name: 'rpz',
    async list() {
      return parseRpzNames(readOwned(o.zoneFile));
    },
    async apply(names): Promise<DnsApplyResult> {
      const sorted = [...new Set(names)].sort();
      const { before } = await write(sorted);
      const had = new Set(before);
      const want = new Set(sorted);
      return { added: sorted.filter((n) => !had.has(n)).length, removed: before.filter((n) => !want.has(n)).length, total: sorted.length, foreign: [] };
    },
    async flush() {
      // Emptied, not deleted: the resolver's configuration names the file.
      await write([]);
    },
  };
}
