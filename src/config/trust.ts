import { accessSync, constants, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../errors.js';

/**
 * Who may change what a root daemon does. config.json names the commands the agent runs
 * as root (`unbound_control`, `rpz_reload`, `dnsmasq_reload`) and the API it trusts;
 * `token_file` and `ca_file` decide which server it believes. Any of them writable by another user, or
 * replaceable through a directory another user can write, is a way to root. Running as
 * root, the agent refuses such a file wherever the config is read (every command, `run`
 * and its SIGHUP reload alike), with the same lines.
 */

const STICKY = 0o1000;

const octal = (m: number) => `0${m.toString(8).padStart(3, '0')}`;
const who = (mode: number) => (mode & 0o002 ? 'every user' : 'its group');

/**
 * The file's status, or undefined when there is nothing to judge: missing or unreadable (the
 * loader reports that), or on a read-only mount (a container's `:ro` bind mount, a Kubernetes
 * ConfigMap or Secret): nobody changes it through this mount, whatever its modes and owner say.
 */
function statOrUndefined(path: string): Stats | undefined {
  try {
    const s = statSync(path);
    accessSync(path, constants.W_OK);
    return s;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EACCES') return statSync(path); // not writable by this (unprivileged) user: the modes still count
    return undefined;
  }
}

/** Every directory from `dir` up to `/`. */
function ancestors(dir: string): string[] {
  const out = [dir];
  for (let d = dir; dirname(d) !== d; d = dirname(d)) out.push(dirname(d));
  return out;
}

/**
 * What makes `path` (config key `key`) changeable by someone other than root: `path: why; fix`
 * lines. The file: written only by its owner, owned by root when `asRoot`. Its directory (as
 * named and as resolved through symlinks): the same, as it can replace the file. Directories
 * above it: the same, unless sticky (/tmp: nobody else may rename what root owns there).
 * Without `asRoot` only the modes count (an unprivileged `check-config` of a file root will use).
 * A file or directory on a read-only mount is not judged (see statOrUndefined).
 */
export function trustProblems(path: string, key: string, asRoot: boolean): string[] {
  const file = statOrUndefined(path);
  if (!file) return [];
  const problems: string[] = [];
  const owner = (s: Stats) => asRoot && s.uid !== 0;
  if (file.mode & 0o022) problems.push(`${key}: ${path} is writable by ${who(file.mode)} (mode ${octal(file.mode & 0o777)}); it steers a root daemon: chmod go-w ${path}`);
  if (owner(file)) problems.push(`${key}: ${path} is owned by uid ${file.uid}, not root; it steers a root daemon: chown root ${path}`);
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    /* stat worked: keep the name as given */
  }
  const parents = [...new Set([dirname(path), dirname(real)])];
  const seen = new Set<string>();
  for (const parent of parents) {
    ancestors(parent).forEach((dir, i) => {
      if (seen.has(dir)) return;
      seen.add(dir);
      const s = statOrUndefined(dir);
      if (!s) return;
      const what = i === 0 ? `${dir} (its directory)` : `${dir} (above it)`;
      if (s.mode & 0o022 && (i === 0 || !(s.mode & STICKY))) {
        problems.push(`${key}: ${what} is writable by ${who(s.mode)} (mode ${octal(s.mode & 0o777)}), which can replace the file; it steers a root daemon: chmod go-w ${dir}`);
      }
      if (owner(s)) problems.push(`${key}: ${what} is owned by uid ${s.uid}, not root, which can replace the file; it steers a root daemon: chown root ${dir}`);
    });
  }
  return problems;
}

export const runningAsRoot = (): boolean => process.getuid?.() === 0;

/** Throws the refusal (ConfigError, exit 2) when a root process is about to read an untrusted `path`. */
export function refuseUntrusted(path: string, key: string): void {
  if (!runningAsRoot()) return;
  const problems = trustProblems(path, key, true);
  if (problems.length) throw new ConfigError(`refusing to run as root with ${path}: another user could change it`, problems);
}
