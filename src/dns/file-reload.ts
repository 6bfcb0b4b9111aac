import { DnsError, errorMessage } from '../errors.js';
import type { CommandRunner } from '../exec/runner.js';
import type { Logger } from '../log.js';
import { runTool } from './exec.js';
import { writeOwned } from './owned-file.js';

export interface FileReload {
  /** The file the agent owns: its whole content is the agent's blocks. */
  file: string;
  /** The resolver's reload command; none: the resolver reads the file on its own (a file watch). */
  reload: readonly string[] | undefined;
  runner: CommandRunner;
  logger: Logger;
}

/**
 * For the backends whose whole state is one file (rpz, dnsmasq): write `text` atomically,
 * then run the reload. When the reload fails, the previous file is put back and reloaded:
 * a resolver that refused the new file may have dropped what it served (unbound empties an
 * RPZ zone before it reads the file), and a resolver that never got the signal would read
 * the new file at its next restart; only the previous file, loaded again, leaves the last
 * good blocks in force in both. `previous` is the file's text before ('' when there was
 * none: then `empty` is put there, so the resolver still finds a valid file).
 */
export async function writeAndReload(o: FileReload, text: string, previous: string, empty: () => string): Promise<void> {
  writeOwned(o.file, text);
  if (!o.reload) return;
  try {
    await runTool(o.runner, o.reload);
  } catch (err) {
    await restore(o, previous || empty(), err);
    throw err instanceof DnsError ? err : new DnsError(String(err), { cause: err });
  }
}

async function restore(o: FileReload, previous: string, failure: unknown): Promise<void> {
  try {
    writeOwned(o.file, previous);
  } catch (err) {
    o.logger.error({ failure: errorMessage(failure) }, `the resolver's reload failed, and the previous ${o.file} could not be put back: ${errorMessage(err)}`);
    return;
  }
  try {
    await runTool(o.runner, o.reload!);
    o.logger.warn(`the resolver's reload failed; the previous ${o.file} is back in force`);
  } catch (again) {
    o.logger.error({ failure: errorMessage(failure) }, `the previous ${o.file} is back, but reloading it failed too: ${errorMessage(again)}`);
  }
}
