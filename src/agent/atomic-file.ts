import { closeSync, fsyncSync, openSync, renameSync, writeSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Write a file so that a crash at any moment leaves either the old or the new
 * content, never a torn file: temp file in the same directory, fsync, rename,
 * fsync the directory.
 */
export function writeFileAtomic(path: string, data: string | Buffer, mode = 0o600): void {
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  } finally {
    try {
      closeSync(fd);
    } catch {
      /* closed in the catch above */
    }
  }
  renameSync(tmp, path);
  try {
    const dfd = openSync(dirname(path), 'r');
    fsyncSync(dfd);
    closeSync(dfd);
  } catch {
    /* directory fsync is best effort (not supported on every filesystem) */
  }
}
