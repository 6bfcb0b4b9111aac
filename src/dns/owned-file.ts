import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic-file.js';
import { DnsError } from '../errors.js';

/** First line of every resolver file the agent writes: a file without it is never overwritten. */
export const OWNED_MARKER = 'managed by wcf-agent';

/** The file's text, '' when absent; DnsError when it exists but is not the agent's own. */
export function readOwned(path: string): string {
  if (!existsSync(path)) return '';
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new DnsError(`cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  const first = text.slice(0, text.indexOf('\n') >>> 0);
  if (text.length > 0 && !first.includes(OWNED_MARKER)) {
    throw new DnsError(`${path} exists and was not written by wcf-agent; it is left alone (move it away or choose another path in config.json)`);
  }
  return text;
}

/** Atomic write, readable by the resolver (it runs as its own user). */
export function writeOwned(path: string, text: string): void {
  try {
    writeFileAtomic(path, text, 0o644);
  } catch (err) {
    throw new DnsError(`cannot write ${path}: ${(err as Error).message}`, { cause: err });
  }
}
