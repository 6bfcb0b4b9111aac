import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * Opening a file in the state directory without trusting what sits there. A FIFO
 * would block a plain read forever (the main thread, so SIGTERM too), and a symlink
 * could point at a secret (/etc/shadow) whose bytes a parse error would then quote.
 * So: never follow a final symlink, never block on open, accept regular files only.
 */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Why a state file cannot be read; the message never quotes the file's content. */
export class UnsafeStateFile extends Error {
  constructor(readonly path: string, readonly reason: string, options?: { cause?: unknown }) {
    super(`${path}: ${reason}`, options);
  }
}

/** The content of a regular file at `path`, or undefined if there is none. Throws UnsafeStateFile otherwise. */
export function readStateFile(path: string, maxBytes = 2 ** 31 - 1): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    // O_NOFOLLOW on a symlink fails with ELOOP.
    if (code === 'ELOOP') throw new UnsafeStateFile(path, 'is a symbolic link, not a regular file', { cause: err });
    throw new UnsafeStateFile(path, `cannot open (${code ?? 'error'})`, { cause: err });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UnsafeStateFile(path, `is not a regular file (${kindOf(st)})`);
    if (st.size > maxBytes) throw new UnsafeStateFile(path, `is larger than expected (${st.size} bytes)`);
    const buf = Buffer.allocUnsafe(st.size);
    let off = 0;
    while (off < st.size) {
      const n = readSync(fd, buf, off, st.size - off, off);
      if (n === 0) break;
      off += n;
    }
    return off === st.size ? buf : buf.subarray(0, off);
  } catch (err) {
    if (err instanceof UnsafeStateFile) throw err;
    throw new UnsafeStateFile(path, `cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`, { cause: err });
  } finally {
    closeSync(fd);
  }
}

function kindOf(st: import('node:fs').Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isDirectory()) return 'a directory';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}
