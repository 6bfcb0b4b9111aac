import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readStateFile } from '../../util/untrusted-file.js';

/** dnsmasq's configuration file when its command line names none. */
export const DEFAULT_CONF = '/etc/dnsmasq.conf';
/** Nested conf-file / conf-dir lines deeper than this are not followed (a loop, or nonsense). */
const MAX_DEPTH = 8;
const MAX_CONF_BYTES = 4 * 1024 * 1024;

export interface RunningDnsmasq {
  pid: number;
  /** Every servers-file the process reads, as absolute paths with links resolved where they exist. */
  serversFiles: string[];
  /** Every configuration file it read at its start (the same way). */
  confFiles: string[];
}

/** A path with its symlinks resolved when it exists (so two spellings of one file compare equal). */
export function canonicalPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve('/', p);
  }
}

interface Found {
  servers: string[];
  confFiles: string[];
  confDirs: string[];
  /** The command line named a conf-file (so the default one is not read). */
  namedConf: boolean;
}

/**
 * The options of a dnsmasq command line that say where its configuration comes from:
 * `--servers-file=F`, `-C F` / `-CF` / `--conf-file=F` (`--conf-file` alone: the default
 * file), `-7 D` / `-7D` / `--conf-dir=D[,ext...]`.
 */
export function readCommandLine(argv: readonly string[]): Found {
  const f: Found = { servers: [], confFiles: [], confDirs: [], namedConf: false };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i] ?? '';
    const long = /^--(servers-file|conf-file|conf-dir)(?:=(.*))?$/.exec(a);
    if (long) {
      const [, key, value] = long;
      if (key === 'conf-file') {
        f.namedConf = true;
        f.confFiles.push(value ?? DEFAULT_CONF);
      } else (key === 'servers-file' ? f.servers : f.confDirs).push(value ?? next());
    } else if (a.startsWith('-C')) {
      f.namedConf = true;
      f.confFiles.push(a.length > 2 ? a.slice(2) : next());
    } else if (a.startsWith('-7')) f.confDirs.push(a.length > 2 ? a.slice(2) : next());
  }
  return f;
}

/** `key=value` lines of a dnsmasq configuration file (comments and blank lines skipped, quotes removed). */
export function confLines(text: string): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  for (const raw of text.split('\n')) {
    // A comment starts a line or follows blanks: `server=10.0.0.1#5353` keeps its port.
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    const eq = line.indexOf('=');
    if (eq > 0) out.push({ key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1') });
  }
  return out;
}

/** The files of a `conf-dir` value (`DIR[,ext,...]`, `*.ext` meaning only those), as dnsmasq picks them. */
export function confDirFiles(spec: string, list: (dir: string) => string[] = (d) => readdirSync(d)): string[] {
  const [dir, ...exts] = spec.split(',');
  const only = exts.filter((e) => e.startsWith('*')).map((e) => e.slice(1));
  const skip = exts.filter((e) => !e.startsWith('*'));
  let names: string[];
  try {
    names = list(dir!);
  } catch {
    return [];
  }
  return names
    .filter((n) => !n.startsWith('.') && !n.endsWith('~') && !(n.startsWith('#') && n.endsWith('#')))
    .filter((n) => (only.length ? only.some((e) => n.endsWith(e)) : !skip.some((e) => e && n.endsWith(e))))
    .sort()
    .map((n) => join(dir!, n));
}

/** The servers-files and configuration files a dnsmasq with this command line reads, following its conf-file and conf-dir options. */
export function dnsmasqFilesOf(argv: readonly string[], read: (path: string) => string | undefined = readConf, list?: (dir: string) => string[]): Omit<RunningDnsmasq, 'pid'> {
  const top = readCommandLine(argv);
  const servers = [...top.servers];
  const seen = new Set<string>();
  const walk = (file: string, depth: number) => {
    if (depth > MAX_DEPTH || seen.has(file)) return;
    seen.add(file);
    for (const { key, value } of confLines(read(file) ?? '')) {
      if (key === 'servers-file') servers.push(value);
      else if (key === 'conf-file') walk(value, depth + 1);
      else if (key === 'conf-dir') for (const f of confDirFiles(value, list)) walk(f, depth + 1);
    }
  };
  for (const f of top.namedConf ? top.confFiles : [DEFAULT_CONF]) walk(f, 0);
  for (const d of top.confDirs) for (const f of confDirFiles(d, list)) walk(f, 1);
  return { serversFiles: [...new Set(servers.map(canonicalPath))], confFiles: [...seen].map(canonicalPath) };
}

/** A configuration file's text; undefined for what is no regular file (NetworkManager's `--conf-file=/dev/null`) or cannot be read. */
function readConf(path: string): string | undefined {
  try {
    // Links resolved first (conf-dir entries are often links), then read without blocking on a FIFO.
    return readStateFile(realpathSync(path), MAX_CONF_BYTES)?.toString('utf8');
  } catch {
    return undefined;
  }
}

/** The dnsmasq processes on this host (by /proc/PID/comm) and the servers-files each reads. */
export function runningDnsmasq(proc = '/proc'): RunningDnsmasq[] {
  const out: RunningDnsmasq[] = [];
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      if (readFileSync(join(proc, pid, 'comm'), 'utf8').trim() !== 'dnsmasq') continue;
      const argv = readFileSync(join(proc, pid, 'cmdline'), 'utf8').split('\0');
      if (argv.at(-1) === '') argv.pop();
      out.push({ pid: Number(pid), ...dnsmasqFilesOf(argv) });
    } catch {
      // gone meanwhile, or hidden from us
    }
  }
  return out;
}
