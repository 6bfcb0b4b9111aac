import { lstatSync, type Stats } from 'node:fs';

/** A regular file's identity and version (inode, size, mtime), or undefined when there is no regular file. */
export function fileVersion(path: string): string | undefined {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return undefined;
  }
  return st.isFile() ? `${st.ino}:${st.size}:${st.mtimeMs}` : undefined;
}

/**
 * The entry count of each applied-set record as last read or written by this process, with
 * the file version it belongs to. At a million entries a record is ~65 MB and a million
 * objects once parsed, and the shrink guard only needs its count: a daemon reads back its own
 * record's count without parsing it every cycle, and a record another process wrote (a manual
 * sync) is read once.
 */
export class AppliedCounts {
  private readonly known = new Map<string, { version: string; count: number }>();

  /** The count for the record at `path`: remembered, or from `load` (then remembered). */
  count(path: string, load: () => number | undefined): number | undefined {
    const version = fileVersion(path);
    const known = this.known.get(path);
    if (version !== undefined && known?.version === version) return known.count;
    const count = load();
    // Versioned after the read too: a file set aside (or replaced) meanwhile is not cached under the old one.
    const after = fileVersion(path);
    if (count !== undefined && after !== undefined && after === version) this.known.set(path, { version: after, count });
    else this.known.delete(path);
    return count;
  }

  /** Around a write of the record: forgotten before, remembered after. */
  writing(path: string, count: number, write: () => void): void {
    this.known.delete(path);
    write();
    const version = fileVersion(path);
    if (version !== undefined) this.known.set(path, { version, count });
  }
}
