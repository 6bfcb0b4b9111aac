import { stderrMatches } from '../exec.js';
import type { CommandRunner } from '../../exec/runner.js';
import { parseNftSetJson, parseNftSetText, type NftSetParsed } from './parse.js';

/** How nft says a table or set does not exist. */
const NO_SUCH_OBJECT = /No such file or directory/i;

/**
 * The limit of a read of one of the agent's small sets (the drops set, a hits set of at most
 * 65,536 addresses: well under a second): a scrape or a probe waits for it, so a stuck nft is
 * killed at this point instead of running on to the runner's limit for writes.
 */
export const QUICK_READ_MS = 5000;

/** A read of a small set: QUICK_READ_MS. */
export const READ_QUICK = { timeoutMs: QUICK_READ_MS } as const;

/** What `nft ARGS` prints, or undefined when the object listed does not exist. */
async function listNft(runner: CommandRunner, args: readonly string[], options: { timeoutMs?: number } = {}): Promise<string | undefined> {
  try {
    return (await runner.run('nft', args, { readOnly: true, ...options })).stdout;
  } catch (err) {
    if (stderrMatches(err, NO_SUCH_OBJECT)) return undefined;
    throw err;
  }
}

/** `nft -j ARGS` output, or undefined when the object listed does not exist. */
export function listNftJson(runner: CommandRunner, args: readonly string[], options: { timeoutMs?: number } = {}): Promise<string | undefined> {
  return listNft(runner, ['-j', ...args], options);
}

/**
 * Elements of one set of `inet <table>`, or undefined when it (or the table) does not exist.
 * Reads only that set, in nft's text form: at a million elements nft 1.0.6 held 645 MB printing
 * text against 1.25 GB building JSON over the same fetch, and the text is parsed without an
 * object per element (see parseNftSetText). The JSON form only when an element carries a
 * quoted string, which the text form cannot delimit safely.
 */
export async function readNftSet(runner: CommandRunner, table: string, set: string, options: { timeoutMs?: number } = {}): Promise<NftSetParsed | undefined> {
  const args = ['list', 'set', 'inet', table, set];
  const text = await listNft(runner, args, options);
  if (text === undefined) return undefined;
  const parsed = parseNftSetText(text);
  if (parsed) return parsed;
  const json = await listNftJson(runner, args, options);
  return json === undefined ? undefined : parseNftSetJson(json);
}
