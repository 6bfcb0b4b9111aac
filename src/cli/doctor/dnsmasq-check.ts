import { basename } from 'node:path';
import type { AgentConfig } from '../../config/load.js';
import { canonicalPath, runningDnsmasq, type RunningDnsmasq } from '../../dns/dnsmasq/running.js';
import { dnsOwnedFiles } from '../../dns/index.js';
import { check, type CheckResult } from './check.js';

/**
 * Whether a running dnsmasq reads the agent's servers-file: the agent can write it and
 * signal dnsmasq without an error while dnsmasq never looks at it (no `servers-file=` line,
 * or one naming another path), and then nothing is blocked. Read from each dnsmasq's command
 * line and the configuration files it names (/proc), so the answer is the running one's.
 */
export function dnsmasqReadsCheck(config: AgentConfig, running: RunningDnsmasq[] = runningDnsmasq()): CheckResult {
  const file = dnsOwnedFiles(config)[0]!;
  const want = canonicalPath(file);
  const hint = `add servers-file=${file} to dnsmasq's configuration (install.sh --dns dnsmasq puts it in /etc/dnsmasq.d/wcf-agent.conf), not into its conf-dir itself, and restart dnsmasq`;
  if (running.length === 0) return check('other', 'dnsmasq reads the file', 'fail', 'no dnsmasq process runs on this host: the names are blocked nowhere', hint);
  const reading = running.filter((d) => d.serversFiles.includes(want));
  const pids = (list: RunningDnsmasq[]) => list.map((d) => d.pid).join(', ');
  // In a conf-dir the file is configuration too: its lines then stay in force until a restart, whatever SIGHUP re-reads.
  const asConf = reading.filter((d) => d.confFiles.includes(want));
  if (asConf.length) return check('other', 'dnsmasq reads the file', 'warn', `dnsmasq (pid ${pids(asConf)}) reads ${file} as a configuration file too (it lies in a conf-dir): an unblocked name stays blocked until dnsmasq restarts`, 'move dnsmasq_file out of dnsmasq\'s conf-dir (the default /var/lib/wcf-agent-dnsmasq/servers.conf)');
  if (reading.length) return check('other', 'dnsmasq reads the file', 'ok', `dnsmasq (pid ${pids(reading)}) reads ${file} as its servers-file`);
  const others = [...new Set(running.flatMap((d) => d.serversFiles))];
  return check(
    'other',
    'dnsmasq reads the file',
    'fail',
    `dnsmasq runs (pid ${pids(running)}) but does not read ${file}: ${others.length ? `its servers-file is ${others.join(', ')}` : 'it has no servers-file'}; the names are blocked nowhere`,
    hint,
  );
}

/** pkill's options that take the next argument as their value (so that argument is no pattern). */
const PKILL_VALUE_OPTIONS = new Set(['-F', '--pidfile', '-u', '--euid', '-U', '--uid', '-G', '--group', '-g', '--pgroup', '-P', '--parent', '-s', '--session', '-t', '--terminal', '--signal', '-q', '--queue', '--ns', '--nslist', '-c', '--cgroup']);

/**
 * A `dnsmasq_reload` that signals the process of a pid file without checking its name
 * (`pkill -HUP -F FILE`): dnsmasq writes that file as its own user and leaves it behind when it
 * exits, so it can name any process, and the agent would send it SIGHUP. Safe: `-x` with the
 * process name last (`pkill -HUP -x -F FILE dnsmasq`), which pkill matches exactly.
 */
export function pidFileReloadUnchecked(argv: readonly string[] | undefined): boolean {
  if (!argv || basename(argv[0] ?? '') !== 'pkill') return false;
  const args = argv.slice(1);
  if (!args.some((a) => a.startsWith('-F') || a.startsWith('--pidfile'))) return false;
  const exact = args.includes('-x') || args.includes('--exact');
  const last = args.at(-1) ?? '';
  const pattern = !last.startsWith('-') && !PKILL_VALUE_OPTIONS.has(args.at(-2) ?? '');
  return !(exact && pattern);
}

/** doctor: a warning when `dnsmasq_reload` would signal whatever process dnsmasq's pid file names. */
export function dnsmasqReloadCheck(config: AgentConfig): CheckResult | undefined {
  if (!pidFileReloadUnchecked(config.dnsmasq_reload)) return undefined;
  return check(
    'other',
    'dnsmasq_reload',
    'warn',
    `dnsmasq_reload (${config.dnsmasq_reload!.join(' ')}) signals whatever process the pid file names: dnsmasq writes that file as its own user and leaves it when it exits, so it may name another process, which SIGHUP ends or reloads`,
    'let pkill check the name: ["pkill","-HUP","-x","-F","/run/dnsmasq/dnsmasq.pid","dnsmasq"] (docs/url-feed.md, dnsmasq)',
  );
}
