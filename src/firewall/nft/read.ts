import { stderrMatches } from '../exec.js';
import type { CommandRunner } from '../../exec/runner.js';
import { parseNftSetJson, parseNftSetText, type NftSetParsed } from './parse.js';

/** How nft says a table or set does not exist. */
const NO_SUCH_OBJECT = /No such file or directory/i;

/** What `nft ARGS` prints, or undefined when the object listed does not exist. */
async function listNft(runner: CommandRunner, args: readonly string[]): Promise<string | undefined> {
  try {
    return (await runner.run('nft', args, { readOnly: true })).stdout;
  } catch (err) {
    if (stderrMatches(err, NO_SUCH_OBJECT)) return undefined;
    throw err;
  }
}

/** `nft -j ARGS` output, or undefined when the object listed does not exist. */
export function listNftJson(runner: CommandRunner, args: readonly string[]): Promise<string | undefined> {
  return listNft(runner, ['-j', ...args]);
}

/**
 * Elements of one set of `inet <table>`, or undefined when it (or the table) does not exist.
 * Reads only that set, in nft's text form: at a million elements nft 1.0.6 held 645 MB printing
 * text against 1.25 GB building JSON over the same fetch, and the text is parsed without an
 * object per element (see parseNftSetText). The JSON form only when an element carries a
 * quoted string, which the text form cannot delimit safely.
 */
export async function readNftSet(runner: CommandRunner, table: string, set: string): Promise<NftSetParsed | undefined> {
  const args = ['list', 'set', 'inet', table, set];
  const text = await listNft(runner, args);
  if (text === undefined) return undefined;
  const parsed = parseNftSetText(text);
  if (parsed) return parsed;
  const json = await listNftJson(runner, args);
  return json === undefined ? undefined : parseNftSetJson(json);
}
