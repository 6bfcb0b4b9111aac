import type { Logger } from '../../log.js';
import { writeAndReload } from '../file-reload.js';
import { readOwned } from '../owned-file.js';
import { nextSerial, parseRpzNames, parseRpzSerial, renderRpzZone } from '../render.js';
import type { DnsAnswer, DnsPlugin } from '../types.js';
import type { CommandRunner } from '../../exec/runner.js';
import { wholeFileBackend } from '../whole-file.js';

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
 * each time), then `rpz_reload`; a failed reload puts the previous zone back in force
 * (writeAndReload).
 */
export function createRpzPlugin(o: RpzOptions): DnsPlugin {
  const target = { file: o.zoneFile, reload: o.reload, runner: o.runner, logger: o.logger };
  async function write(names: readonly string[]): Promise<string[]> {
    const previous = readOwned(o.zoneFile);
    const text = renderRpzZone(names, o.answer, nextSerial(parseRpzSerial(previous), o.now()));
    await writeAndReload(target, text, previous, () => renderRpzZone([], o.answer, nextSerial(undefined, o.now())));
    return parseRpzNames(previous);
  }

  return wholeFileBackend('rpz', { read: () => parseRpzNames(readOwned(o.zoneFile)), write });
}
