import { loadContext, type GlobalOptions } from '../context.js';

/** The daemon arrives with the lifecycle work; until then it says so instead of pretending. */
export async function runCommand(opts: GlobalOptions & { dryRun?: boolean }): Promise<number> {
  loadContext(opts);
  process.stderr.write('wcf-agent run: the daemon is not available in this version yet; use `wcf-agent sync --once` from a timer\n');
  return 2;
}
