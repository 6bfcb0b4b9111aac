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
