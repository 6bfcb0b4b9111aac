import { closeSync, constants, fchmodSync, fsyncSync, openSync, renameSync, writeSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Write a file so that a crash at any moment leaves either the old or the new
 * content, never a torn file: temp file in the same directory, fsync, rename,
 * fsync the directory.
 */
export function writeFileAtomic(path: string, data: string | Buffer | Iterable<Uint8Array>, mode = 0o600): void {
  const tmp = `${path}.tmp-${process.pid}`;
  // A leftover temp file (a crash) is removed, then the new one is created exclusively and
  // without following a symlink: whatever sits at that name, nothing outside is written through it.
  try {
    unlinkSync(tmp);
  } catch {
    /* usually absent */
  }
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    // Exactly `mode`, whatever the umask (the unit's UMask=0077 would make a resolver's file unreadable to the resolver).
    fchmodSync(fd, mode);
    // Several chunks (a list or a generator) are written one after the other: large state is written from
    // views or produced a piece at a time, never copied into one buffer.
    const chunks = typeof data === 'string' ? [Buffer.from(data, 'utf8')] : Buffer.isBuffer(data) ? [data] : data;
    for (const chunk of chunks) writeAll(fd, chunk);
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

/** writeSync may write less than asked (large buffers, signals): loop until all is written. */
function writeAll(fd: number, chunk: Uint8Array): void {
  for (let off = 0; off < chunk.length; ) off += writeSync(fd, chunk, off, chunk.length - off);
}
