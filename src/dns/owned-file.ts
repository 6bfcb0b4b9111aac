import { writeFileAtomic } from '../util/atomic-file.js';
import { readStateFile, UnsafeStateFile } from '../util/untrusted-file.js';
import { DnsError } from '../errors.js';

/** First line of every resolver file the agent writes: a file without it is never overwritten. */
export const OWNED_MARKER = 'managed by wcf-agent';

/**
 * The file's text, '' when absent. Read as state files are (regular files only, never
 * through a final symlink, never blocking): a FIFO at the path would otherwise hang the
 * agent in the read, SIGTERM included. DnsError when the path holds something else, or a
 * file that is not the agent's own; the message never quotes the file.
 */
export function readOwned(path: string): string {
  let buf: Buffer | undefined;
  try {
    buf = readStateFile(path);
  } catch (err) {
    const why = err instanceof UnsafeStateFile ? err.reason : (err as Error).message;
    throw new DnsError(`cannot read ${path}: ${why}; it is left alone (remove it or choose another path in config.json)`, { cause: err });
  }
  if (buf === undefined) return '';
  const text = buf.toString('utf8');
  if (text.length > 0 && !isOwnedText(text)) {
    throw new DnsError(`${path} exists and was not written by wcf-agent; it is left alone (move it away or choose another path in config.json)`);
  }
  return text;
}

/** Whether a resolver file's text starts with the agent's marker line. */
export function isOwnedText(text: string): boolean {
  return text.slice(0, text.indexOf('\n') >>> 0).includes(OWNED_MARKER);
}

/** Atomic write, readable by the resolver (it runs as its own user). */
export function writeOwned(path: string, text: string): void {
  try {
    writeFileAtomic(path, text, 0o644);
  } catch (err) {
    throw new DnsError(`cannot write ${path}: ${(err as Error).message}`, { cause: err });
  }
}
