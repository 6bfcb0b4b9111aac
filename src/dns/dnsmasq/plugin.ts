import type { CommandRunner } from '../../exec/runner.js';
import type { Logger } from '../../log.js';
import { writeAndReload } from '../file-reload.js';
import { readOwned } from '../owned-file.js';
import { wholeFileBackend } from '../whole-file.js';
import type { DnsPlugin } from '../types.js';
import { parseServersFile, renderServersFile } from './servers-file.js';

export interface DnsmasqOptions {
  /** The servers-file the agent owns (dnsmasq's `servers-file=` names it). */
  file: string;
  /** Makes dnsmasq re-read the file, e.g. ['systemctl', 'kill', '-s', 'HUP', 'dnsmasq']; none: only while switching away from dnsmasq. */
  reload: readonly string[] | undefined;
  runner: CommandRunner;
  logger: Logger;
}

/**
 * dnsmasq: the whole servers-file is the agent's (written atomically), then `dnsmasq_reload`;
 * a failed reload puts the previous file back (writeAndReload). The signal goes only when the
 * names changed: SIGHUP empties dnsmasq's whole cache, which a cycle that changed nothing has
 * no reason to cost the host. A file written with the same names stays as it is, so `flush`
 * on a missing file creates it, valid and empty, without signalling a dnsmasq that may not run
 * yet (dnsmasq can then be started with `servers-file=` naming it before the first sync).
 */
export function createDnsmasqPlugin(o: DnsmasqOptions): DnsPlugin {
  const target = { file: o.file, reload: o.reload, runner: o.runner, logger: o.logger };
  async function write(names: readonly string[]): Promise<string[]> {
    const previous = readOwned(o.file);
    const before = parseServersFile(previous);
    const text = renderServersFile(names);
    if (text === previous) return before;
    const had = new Set(before);
    const changed = had.size !== names.length || names.some((n) => !had.has(n));
    await writeAndReload(changed ? target : { ...target, reload: undefined }, text, previous, () => renderServersFile([]));
    if (changed && !o.reload) o.logger.warn(`${o.file} changed but dnsmasq_reload is not set: dnsmasq reads it at its next SIGHUP or restart`);
    return before;
  }

  return wholeFileBackend('dnsmasq', { read: () => parseServersFile(readOwned(o.file)), write });
}
