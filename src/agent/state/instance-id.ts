import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../util/atomic-file.js';
import { readStateFile, UnsafeStateFile } from '../../util/untrusted-file.js';

/**
 * Which agent this is: a random id made once per state directory and written
 * into the marker of every firewall object it creates (`wcf-agent <id>`, see
 * firewall/ownership.ts). Two agents on one host with separate state (a .deb
 * and a container, both with the default names) then see that a table under
 * their name is the other's, and refuse it instead of rewriting it with their
 * own selection every cycle. The id lives with the state, not the host or the
 * path: the same state seen from a container and from the host is the same
 * agent; a state directory wiped is a new one (its old objects must then be
 * removed by hand, as the refusal says).
 */
const FILE = 'instance-id';
const ID = /^[0-9a-f]{16}$/;

/** The id of the agent of `stateDir`, made and saved at first use; undefined when it can neither be read nor written (a read-only user). */
export function instanceId(stateDir: string): string | undefined {
  const path = join(stateDir, FILE);
  try {
    const text = readStateFile(path, 64)?.toString('latin1').trim();
    if (text !== undefined && ID.test(text)) return text;
  } catch (err) {
    if (!(err instanceof UnsafeStateFile)) throw err;
  }
  // The kernel's random UUID, not node:crypto: this runs in every command, and loading crypto
  // costs every command's start (and memory) for 16 characters.
  const id = readFileSync('/proc/sys/kernel/random/uuid', 'latin1').replace(/[^0-9a-f]/g, '').slice(0, 16);
  try {
    writeFileAtomic(path, `${id}\n`);
    return id;
  } catch {
    return undefined;
  }
}
